#!/usr/bin/env bash
# Hostile-load budgets (Health under the largest Renders, 60 connections of
# partial bodies, bodies without a token, the unauthenticated drain of issue 24
# item 3: `bench/hostile.sh unauthenticated`); see bench/lib/hostile.py (--help).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
[ -x .build/release/herald ] || swift build -c release --product herald
exec "$PY" bench/lib/hostile.py "$@"
