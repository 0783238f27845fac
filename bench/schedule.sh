#!/usr/bin/env bash
# Schedule throughput/latency, durable (group commit, synchronous=FULL):
#   bench/schedule.sh [-n 200000] [-c 16] [-m 32] [--runs 3]
#   BASELINE_BIN=/tmp/herald-old SKIP_BUILD=1 bench/schedule.sh   # A/B: old and
#       new binary alternating (AB_ROUNDS rounds), medians (bench/lib/ab.sh)
# HERALD_BIN overrides the binary (default .build/release/herald).
set -euo pipefail
cd "$(dirname "$0")/.."

schedule_figures() {   # one run's output -> `name value` lines for bench/lib/ab.sh
    awk '/^run [0-9]+:/ {
        for (i = 1; i <= NF; i++) {
            if ($i == "req/s") { v = $(i - 1); gsub(",", "", v); print "schedule-req/s", v }
            if ($i == "p50") print "schedule-p50-ms", $(i + 1)
            if ($i == "p99") print "schedule-p99-ms", $(i + 1)
            if ($i == "user" && $(i - 1) == "CPU") print "server-cpu-user-s", $(i + 1)
        } }'
}
source bench/lib/ab.sh
ab_run schedule_figures bench/schedule.sh "$@"
PY=${PY:-.venv/bin/python}
[ -n "${HERALD_BIN:-}" ] || [ -x .build/release/herald ] || swift build -c release --product herald
exec "$PY" bench/lib/schedule.py "$@"
