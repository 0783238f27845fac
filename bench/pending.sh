#!/usr/bin/env bash
# 1,000,000 pending messages: fill through Schedule (h2load), restart, time
# exec → "listening on" and VmHWM.  bench/pending.sh [-n 1000000] [--restarts 3]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
[ -x .build/release/herald ] || swift build -c release --product herald
exec "$PY" bench/lib/pending.py "$@"
