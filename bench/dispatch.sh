#!/usr/bin/env bash
# See bench/lib/dispatch.py for what it measures; flags pass through (--help).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
[ -x .build/release/herald ] || swift build -c release --product herald
exec "$PY" bench/lib/dispatch.py "$@"
