#!/usr/bin/env bash
# Server instructions per durable Schedule, counted by callgrind: repeatable
# whatever else the machine runs (bench/schedule.sh's rates swing ±30 % on
# the shared cores). bench/engine-instructions.sh with RPC=schedule (see
# there); ~1 min per binary at N=3000.
#
#   bench/schedule-instructions.sh /tmp/herald-old .build/release/herald   # binaries, in order
#   N=3000 TOP=60 KEEP=/tmp/cg bench/schedule-instructions.sh BIN...
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python} RPC=schedule N=${N:-5000} exec bench/engine-instructions.sh "$@"
