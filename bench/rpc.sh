#!/usr/bin/env bash
# RPC engine benchmark: h2load against `herald serve` (grpc.health.v1.Health/Check
# and herald.v1.PushService/Status, both with the empty request) and, in the same
# run, nghttpd serving a small static file as the raw-HTTP/2 ceiling.
#
#   bench/rpc.sh                 # release build, then the runs
#   N_MANY=100000 N_ONE=5000 SKIP_BUILD=1 bench/rpc.sh
#   BASELINE_BIN=/tmp/herald-old SKIP_BUILD=1 bench/rpc.sh   # A/B: Health c16 m32,
#       old and new binary alternating (AB_ROUNDS rounds), medians and the ratio;
#       HERALD_ARGS / BASELINE_ARGS add flags to the new / baseline server
#       (e.g. HERALD_ARGS="--admin-port 0": metrics on and scraped by nobody)
#
# Only 127.0.0.1 is loaded; every run is bounded by -n and by `timeout`.
set -euo pipefail
cd "$(dirname "$0")/.."

N_MANY=${N_MANY:-400000}     # requests per -c16 -m32 run
N_ONE=${N_ONE:-20000}        # requests per -c1 -m1 run
N_SOAK=${N_SOAK:-1000000}    # total requests before the final RSS sample
H2LOAD_THREADS=${H2LOAD_THREADS:-1}
RUN_TIMEOUT=${RUN_TIMEOUT:-180}

if [[ -z "${SKIP_BUILD:-}" && -z "${HERALD_BIN:-}" ]]; then
    swift build -c release --product herald >&2
fi
BIN=${HERALD_BIN:-.build/release/herald}   # HERALD_BIN: another binary, no build
WORK=$(mktemp -d /tmp/herald-rpc-bench.XXXXXX)
HERALD_PID=""
NGHTTPD_PID=""
cleanup() {
    [[ -n "$HERALD_PID" ]] && kill "$HERALD_PID" 2>/dev/null || true
    [[ -n "$NGHTTPD_PID" ]] && kill "$NGHTTPD_PID" 2>/dev/null || true
    [[ -n "$HERALD_PID" ]] && wait "$HERALD_PID" 2>/dev/null || true
    [[ -n "$NGHTTPD_PID" ]] && wait "$NGHTTPD_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

printf '\x00\x00\x00\x00\x00' > "$WORK/empty.bin"           # framed empty message
mkdir -p "$WORK/www"
printf '\x00\x00\x00\x00\x02\x08\x01' > "$WORK/www/check"    # same size as the Health reply

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# --- servers -----------------------------------------------------------------
source bench/lib/serve.sh
# HERALD_ARGS: extra flags for the binary under test (e.g. "--admin-port 0").
# shellcheck disable=SC2086
start_herald "$WORK" ${HERALD_ARGS:-}

NGHTTPD_PORT=$(free_port)
nghttpd --no-tls -d "$WORK/www" "$NGHTTPD_PORT" > "$WORK/nghttpd.log" 2>&1 &
NGHTTPD_PID=$!
for _ in $(seq 1 200); do
    nghttp -t 1s "http://127.0.0.1:$NGHTTPD_PORT/check" > /dev/null 2>&1 && break
    sleep 0.05
done

# --- A/B mode: the same Health run against a baseline binary, alternating ----
if [[ -n "${BASELINE_BIN:-}" ]]; then
    # shellcheck disable=SC2086
    "$BASELINE_BIN" serve --port 0 --data-dir "$WORK/data-base" --log-level warning ${BASELINE_ARGS:-} > "$WORK/base.out" 2> "$WORK/base.err" &
    BASE_PID=$!
    for _ in $(seq 1 200); do grep -q "listening on" "$WORK/base.out" 2>/dev/null && break; sleep 0.05; done
    BASE_PORT=$(sed -n 's/.*listening on [^:]*:\([0-9]*\).*/\1/p' "$WORK/base.out" | head -1)
    ab_rps() {
        timeout "$RUN_TIMEOUT" h2load -n "$N_MANY" -c 16 -m 32 -t "$H2LOAD_THREADS" -d "$WORK/empty.bin" \
            -H "content-type: application/grpc" -H "te: trailers" "http://127.0.0.1:$1/grpc.health.v1.Health/Check" 2>&1 \
            | sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p'
    }
    ab_rps "$BASE_PORT" > /dev/null; ab_rps "$HERALD_PORT" > /dev/null   # warm-up
    OLD=(); NEW=()
    for round in $(seq 1 "${AB_ROUNDS:-5}"); do
        o=$(ab_rps "$BASE_PORT"); n=$(ab_rps "$HERALD_PORT")
        OLD+=("$o"); NEW+=("$n")
        echo "round $round: baseline $o req/s, new $n req/s"
    done
    kill "$BASE_PID" 2>/dev/null; wait "$BASE_PID" 2>/dev/null || true
    mid() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
    awk -v o="$(mid "${OLD[@]}")" -v n="$(mid "${NEW[@]}")" 'BEGIN {
        r = n / o; printf "Health c16m32 median: baseline %.0f, new %.0f req/s = %.1f%% (budget >= 95%%) %s\n",
            o, n, 100*r, (r >= 0.95 ? "PASS" : "FAIL") }'
    exit 0
fi

HERALD="http://127.0.0.1:$HERALD_PORT"
HEALTH="$HERALD/grpc.health.v1.Health/Check"
STATUS="$HERALD/herald.v1.PushService/Status"
GRPC_ARGS=(-d "$WORK/empty.bin" -H "content-type: application/grpc" -H "te: trailers")
# nghttpd gets the same request shape (POST + 5-byte body) and answers with the file.
NGHTTPD_ARGS=(-d "$WORK/empty.bin")

rss_kib() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$HERALD_PID/status"; }
RSS_IDLE=$(rss_kib VmRSS)    # before any request

# --- correctness: h2load counts HTTP 200 as success, so check grpc-status once --
for url in "$HEALTH" "$STATUS"; do
    out=$(nghttp -v -t 5s "${GRPC_ARGS[@]}" "$url" 2>&1 | tr -d '\000')
    grep -q "grpc-status: 0" <<< "$out" || { echo "FAIL: $url did not answer grpc-status 0" >&2; echo "$out" >&2; exit 1; }
done
echo "grpc-status 0 verified for Health/Check and Status (nghttp -v)"

# --- runs ---------------------------------------------------------------------
TOTAL=0
P50S_N=(); P50S_H=()
# run NAME URL N C M [extra h2load args...]  → one result line
run() {
    local name=$1 url=$2 n=$3 c=$4 m=$5; shift 5
    local log="$WORK/$name.log"
    local out
    out=$(timeout "$RUN_TIMEOUT" h2load -n "$n" -c "$c" -m "$m" -t "$H2LOAD_THREADS" --log-file="$log" "$@" "$url" 2>&1) \
        || { echo "h2load failed: $out" >&2; exit 1; }
    local rps succeeded mean
    rps=$(sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p' <<< "$out")
    succeeded=$(sed -n 's/.* \([0-9]*\) succeeded.*/\1/p' <<< "$out")
    mean=$(awk '$1 == "time" && $2 == "for" && $3 == "request:" {print $6}' <<< "$out")
    # The log holds one line per request: start (µs), status, duration (µs).
    local pct
    pct=$(awk '{print $3}' "$log" | sort -n | awk '{a[NR]=$1} END {
        p50=a[int(NR*0.50)>0?int(NR*0.50):1]; p99=a[int(NR*0.99)>0?int(NR*0.99):1];
        printf "%d %d", p50, p99 }')
    printf "%-22s c=%-2s m=%-2s n=%-7s %10s req/s  ok=%-7s mean=%-9s p50=%6sus p99=%6sus\n" \
        "$name" "$c" "$m" "$n" "$rps" "$succeeded" "$mean" ${pct% *} ${pct#* }
    if [[ "$name" == herald* ]]; then TOTAL=$((TOTAL + n)); fi
    eval "RPS_${name//[-.]/_}=$rps; P50_${name//[-.]/_}=${pct% *}"
    return 0
}

# Warm-up, then the steady-state RSS sample.
run herald-warmup "$HEALTH" 50000 16 32 "${GRPC_ARGS[@]}" > /dev/null
RSS_STEADY=$(rss_kib VmRSS)

echo "== -c 16 -m 32 =="
run nghttpd-c16 "http://127.0.0.1:$NGHTTPD_PORT/check" "$N_MANY" 16 32 "${NGHTTPD_ARGS[@]}"
run herald-health-c16 "$HEALTH" "$N_MANY" 16 32 "${GRPC_ARGS[@]}"
run herald-status-c16 "$STATUS" "$N_MANY" 16 32 "${GRPC_ARGS[@]}"
echo "== -c 1 -m 1 (3 interleaved rounds; neighbours' load drifts) =="
for round in 1 2 3; do
    run nghttpd-c1 "http://127.0.0.1:$NGHTTPD_PORT/check" "$N_ONE" 1 1 "${NGHTTPD_ARGS[@]}"
    run herald-health-c1 "$HEALTH" "$N_ONE" 1 1 "${GRPC_ARGS[@]}"
    run herald-status-c1 "$STATUS" "$N_ONE" 1 1 "${GRPC_ARGS[@]}"
    P50S_N+=("$P50_nghttpd_c1"); P50S_H+=("$P50_herald_health_c1")
done
median() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
P50_nghttpd_c1=$(median "${P50S_N[@]}")
P50_herald_health_c1=$(median "${P50S_H[@]}")

# Soak to N_SOAK requests in total, then compare RSS with the steady state.
TOTAL=$((TOTAL + 50000))
if (( TOTAL < N_SOAK )); then
    run herald-soak "$HEALTH" $((N_SOAK - TOTAL)) 16 32 "${GRPC_ARGS[@]}"
    TOTAL=$N_SOAK
fi
RSS_AFTER=$(rss_kib VmRSS)
HWM=$(rss_kib VmHWM)

echo "== verdicts =="
awk -v h="$RPS_herald_health_c16" -v n="$RPS_nghttpd_c16" 'BEGIN {
    r = h / n; printf "Health c16m32 / nghttpd: %.1f%% (budget >= 65%%) %s\n", 100*r, (r >= 0.65 ? "PASS" : "FAIL") }'
awk -v h="$P50_herald_health_c1" -v n="$P50_nghttpd_c1" 'BEGIN {
    r = h / n; printf "Health c1m1 p50 / nghttpd p50 (median of 3 rounds): %dus / %dus = %.2f (budget <= 1.15) %s\n", h, n, r, (r <= 1.15 ? "PASS" : "FAIL") }'
awk -v k="$HWM" -v i="$RSS_IDLE" 'BEGIN { printf "herald peak RSS (VmHWM): %.1f MiB (budget <= 24 MiB) %s; idle before any request %.1f MiB, so load adds %.1f MiB\n",
    k/1024, (k <= 24*1024 ? "PASS" : "FAIL"), i/1024, (k-i)/1024 }'
awk -v s="$RSS_STEADY" -v a="$RSS_AFTER" -v t="$TOTAL" 'BEGIN {
    r = a / s; printf "RSS steady %.1f MiB -> after %d requests %.1f MiB (%+.1f%%, budget within 10%%) %s\n",
        s/1024, t, a/1024, 100*(r-1), (r <= 1.10 ? "PASS" : "FAIL") }'

kill -TERM "$HERALD_PID"
wait "$HERALD_PID" && echo "herald exited 0 after SIGTERM"
HERALD_PID=""
