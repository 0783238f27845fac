#!/usr/bin/env bash
# Issue 13's start-up budget: with 1,000,000 pending messages in PostgreSQL a
# replica serves in ≤ 5 s (it loads none of them: due messages are polled).
#   bench/postgres.sh [-n 1000000]
# Needs HERALD_TEST_POSTGRES_URL (eval "$(scripts/pg-test-cluster.sh start)");
# creates its own database and drops it at the end. HERALD_BIN overrides the
# binary (default: the release build, built when missing).
# Prints: seed time, then "serving after S s" for a cold start (migrations,
# own-claims recovery, pool) measured from exec to the "listening" line.
set -euo pipefail
cd "$(dirname "$0")/.."
N=1000000
if [[ "${1:-}" == "-n" ]]; then N=$2; fi
URL=${HERALD_TEST_POSTGRES_URL:?set HERALD_TEST_POSTGRES_URL (scripts/pg-test-cluster.sh start)}
source bench/lib/release.sh

DB=herald_bench_$$
base=${URL%%\?*}
DBURL="${base%/*}/$DB${URL#"$base"}"
WORK=$(mktemp -d)
PID=""
cleanup() {
    if [[ -n "$PID" ]] && kill -0 "$PID" 2>/dev/null; then kill "$PID"; wait "$PID" || true; fi
    psql "$URL" -Xq -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
psql "$URL" -Xq -c "CREATE DATABASE $DB"

# Starts `herald serve` on the bench database; sets PID and ELAPSED, the
# seconds from exec to its "listening" line (bounded: 120 s). Not called in
# $(…): PID must reach the caller.
serve() {
    local start now
    start=$(date +%s%N)
    "$HERALD_BIN" serve --port 0 --data-dir "$WORK/data" --store "$DBURL" --replica-id bench \
        --log-level warning >"$WORK/out" 2>"$WORK/err" &
    PID=$!
    for _ in $(seq 12000); do
        if grep -q listening "$WORK/out"; then
            now=$(date +%s%N)
            ELAPSED=$(echo "scale=3; ($now - $start) / 1000000000" | bc)
            return 0
        fi
        kill -0 "$PID" 2>/dev/null || { cat "$WORK/err" >&2; return 1; }
        sleep 0.01
    done
    echo "herald did not report listening within 120 s" >&2
    return 1
}
stop() { kill -TERM "$PID"; wait "$PID"; PID=""; }

serve   # creates the schema
stop

FAR=$(( ($(date +%s) + 7 * 86400) * 1000 ))
NOW=$(( $(date +%s) * 1000 ))
seed_start=$(date +%s)
psql "$DBURL" -Xq -v ON_ERROR_STOP=1 <<SQL
BEGIN;
INSERT INTO messages(id, bundle_id, platform, user_id, campaign_id, idempotency_key, delivery_method, ab_test,
                     window_start, window_end, due_at, state, created_at, updated_at, request)
SELECT 'bench-' || lpad(i::text, 8, '0'), 'com.example.bench', 'ios', 'user-' || (i % 10000), 'bench', 'k' || i,
       'traditional', false, $FAR, $FAR + 3600000, $FAR + i, 'scheduled', $NOW, $NOW, '\x00'::bytea
FROM generate_series(1, $N) AS i;
INSERT INTO message_keys(bundle_id, idempotency_key, message_id)
SELECT 'com.example.bench', 'k' || i, 'bench-' || lpad(i::text, 8, '0') FROM generate_series(1, $N) AS i;
COMMIT;
ANALYZE messages;
SQL
echo "seeded $N pending messages in $(( $(date +%s) - seed_start )) s"
for run in 1 2 3; do
    serve
    echo "run $run: serving after $ELAPSED s with $N pending"
    stop
done
