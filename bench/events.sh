#!/usr/bin/env bash
# Issue 27's StreamEvents budgets (bench/lib/events_bench.py): (1) dispatch with
# 10 consumers streaming everything vs without, the same binary, alternating
# rounds: rates, server CPU per message and the ratio (budget >= 0.9x);
# (2) event delivery latency p50/p99, commit -> consumer receipt, on SQLite and
# (with HERALD_TEST_POSTGRES_URL) across two PostgreSQL replicas, consumer on
# replica A, Schedules to replica B (budget p99 <= 1 s). Peak RSS printed.
#   HERALD_BIN=<herald> bench/events.sh [--part dispatch|latency|all] [-n 50000] [--users 200]
#       [--consumers 10] [--consumer h2load|grpcio] [--rounds 3] [--rate 200] [--seconds 20]
#   eval "$(scripts/pg-test-cluster.sh start)" first for the replicas' latency.
# Only loopback is loaded; bounded by -n, --seconds and --timeout.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/release.sh
export HERALD_BIN
exec "${PY:-.venv/bin/python}" bench/lib/events_bench.py "$@"
