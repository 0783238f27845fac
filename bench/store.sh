#!/usr/bin/env bash
# Store benchmarks (release): durable schedules/s with 64 concurrent writers
# (group commit, synchronous=FULL), with random (v4) instead of time-ordered
# (v7) message IDs, with the other durability modes, with 256 writers and
# with a single writer; p50/p99
# latency of the awaited, committed write; pending-index load time and RSS
# for 1,000,000 rows, measured in a fresh process.
#
#   bench/store.sh
#   HERALD_BENCH_SECONDS=10 HERALD_BENCH_PENDING=200000 bench/store.sh
#
# The benchmarks are Swift Testing tests (Tests/HeraldStorageTests/
# StoreBenchmarks.swift) skipped unless HERALD_BENCH=1; `-enable-testing`
# because the test target uses @testable imports.
set -euo pipefail
cd "$(dirname "$0")/.."

export HERALD_BENCH=1
export HERALD_BENCH_DIR="${HERALD_BENCH_DIR:-${TMPDIR:-/tmp}/herald-bench-$$}"
SWIFT_TEST=(swift test -c release -Xswiftc -enable-testing)

run() {
    local label="$1" filter="$2"
    "${SWIFT_TEST[@]}" --skip-build --filter "$filter" 2>&1 | grep -E '^BENCH|✘|error' | sed "s/^BENCH store /[$label] /" || true
}

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) · $(nproc) cores · load $(cut -d' ' -f1-3 /proc/loadavg) · SQLite $(sqlite3 --version 2>/dev/null | cut -d' ' -f1)"
"${SWIFT_TEST[@]}" --filter StoreBenchmarks/singleWriter >/dev/null 2>&1 || true   # build once
run "64 writers, FULL, v7 ids" 'StoreBenchmarks/groupCommit64Writers\(\)'
HERALD_BENCH_IDS=v4 run "64 writers, FULL, v4 ids" 'StoreBenchmarks/groupCommit64Writers\(\)'
run "64 writers, pipelined fsync" 'StoreBenchmarks/groupCommit64WritersPipelinedSync'
run "64 writers, processCrash (no fsync before ack)" 'StoreBenchmarks/groupCommit64WritersProcessCrash'
HERALD_BENCH_WRITERS=256 run "256 writers, FULL, v7 ids" 'StoreBenchmarks/groupCommitManyWriters'
run "1 writer, FULL" 'StoreBenchmarks/singleWriter'
HERALD_BENCH_SEED=1 run "seed" 'StoreBenchmarks/seedPending'
HERALD_BENCH_LOAD=1 run "start, quick_check" 'StoreBenchmarks/pendingIndexLoad'
HERALD_BENCH_LOAD=1 HERALD_BENCH_QUICK_CHECK=0 run "start, no check" 'StoreBenchmarks/pendingIndexLoad'
rm -rf "$HERALD_BENCH_DIR"
