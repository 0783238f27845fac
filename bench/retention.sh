#!/usr/bin/env bash
# Store size (herald.sqlite + WAL) over time under a steady schedule-and-deliver
# load with a short retention (--retention-seconds, a testing flag):
#   bench/retention.sh [--rate 300] [--duration 180] [--retention-seconds 20] [--every 10]
#   bench/retention.sh --retention-seconds 0      # the default 30 days: it grows
# See bench/lib/retention.py. HERALD_BIN overrides the binary (default .build/release/herald).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
[ -n "${HERALD_BIN:-}" ] || [ -x .build/release/herald ] || swift build -c release --product herald
exec "$PY" bench/lib/retention.py "$@"
