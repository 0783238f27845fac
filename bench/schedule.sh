#!/usr/bin/env bash
# Schedule throughput/latency, durable (group commit, synchronous=FULL):
#   bench/schedule.sh [-n 200000] [-c 16] [-m 32] [--runs 3]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
[ -x .build/release/herald ] || swift build -c release --product herald
exec "$PY" bench/lib/schedule.py "$@"
