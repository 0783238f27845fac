#!/usr/bin/env bash
# Issue 13's budgets in one run, PostgreSQL beside SQLite (bench/lib/replicas.py):
# durable Schedule (≥ 0.6× SQLite), two PostgreSQL replicas' dispatch (≥ 0.8× one
# SQLite replica, 0 duplicates), lateness p99 ≤ 1 s at 5,000 due/s over two replicas.
#   eval "$(scripts/pg-test-cluster.sh start)"; bench/replicas.sh [--schedule-n N] [-n N] [--rounds R] [--only PART]
# HERALD_BIN overrides the binary (default: the release build, built when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${HERALD_TEST_POSTGRES_URL:?set HERALD_TEST_POSTGRES_URL (eval \"\$(scripts/pg-test-cluster.sh start)\")}"
source bench/lib/release.sh
export HERALD_BIN
exec "${PY:-.venv/bin/python}" bench/lib/replicas.py "$@"
