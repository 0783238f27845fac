#!/usr/bin/env bash
# Store benchmarks (release): durable schedules/s with 64 concurrent writers
# (group commit) and with one writer, p50/p99 commit latency; pending-index
# load time and RSS for 1,000,000 rows, measured in a fresh process.
#
#   bench/store.sh            # everything
#   HERALD_BENCH_SECONDS=10 HERALD_BENCH_PENDING=200000 bench/store.sh
#
# The benchmarks are Swift Testing tests skipped unless HERALD_BENCH=1.
# `-enable-testing` because the test target uses @testable imports.
set -euo pipefail
cd "$(dirname "$0")/.."

export HERALD_BENCH=1
export HERALD_BENCH_DIR="${HERALD_BENCH_DIR:-${TMPDIR:-/tmp}/herald-bench}"
SWIFT_TEST=(swift test -c release -Xswiftc -enable-testing)

run() { "${SWIFT_TEST[@]}" --filter "$1" 2>&1 | grep -E '^BENCH|✘|error' || true; }

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nproc) cores, SQLite $(sqlite3 --version 2>/dev/null | cut -d' ' -f1)"
"${SWIFT_TEST[@]}" --filter StoreBenchmarks/singleWriter >/dev/null 2>&1 || true   # build once
run 'StoreBenchmarks/groupCommit64Writers\(\)'
run 'StoreBenchmarks/groupCommit64WritersNormal'
run 'StoreBenchmarks/singleWriter'
HERALD_BENCH_SEED=1 run 'StoreBenchmarks/seedPending'
HERALD_BENCH_LOAD=1 run 'StoreBenchmarks/pendingIndexLoad'
HERALD_BENCH_LOAD=1 HERALD_BENCH_QUICK_CHECK=0 run 'StoreBenchmarks/pendingIndexLoad'
rm -rf "$HERALD_BENCH_DIR"
