#!/usr/bin/env bash
# 24 × kill -9 during delivery; prints kills, messages, lost, duplicates,
# delivered-but-FAILED, UNCONFIRMED, never-handed-over-then-delivered.
# bench/crash.sh [--kills 24] [--users 100] [--per-user 100] [--devices 2] [--delay-ms 20]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
[ -x .build/release/herald ] || swift build -c release --product herald
exec "$PY" bench/lib/crash.py "$@"
