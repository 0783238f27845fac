#!/usr/bin/env bash
# Schedule throughput/latency, durable (group commit, synchronous=FULL):
#   bench/schedule.sh [-n 200000] [-c 16] [-m 32] [--runs 3]
# Another binary (e.g. an old build, to compare in one run, alternating):
#   HERALD_BIN=/path/to/herald bench/schedule.sh …
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
[ -n "${HERALD_BIN:-}" ] || [ -x .build/release/herald ] || swift build -c release --product herald
exec "$PY" bench/lib/schedule.py "$@"
