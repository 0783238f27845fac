#!/usr/bin/env bash
# TLS benchmark (issue 24): Health/Check over TLS against, in the same run,
# nghttpd over TLS with the same certificate (serving a static file of the
# Health reply's size, as bench/rpc.sh does for h2c) and Herald's own h2c;
# then new TLS connections per second (full handshakes, ECDSA P-256: one
# request per connection) against Herald and nghttpd.
#
#   bench/tls.sh                       # release build, then the runs
#   SKIP_BUILD=1 N_MANY=100000 N_CONN=2000 bench/tls.sh
#   HERALD_BIN=.build/debug/herald bench/tls.sh     # another binary, no build
#   NGHTTPD_THREADS=2 bench/tls.sh  # nghttpd with 2 worker threads (default 1, as bench/rpc.sh)
#
# Prints per run: rate, p50/p99 (h2load --log-file), server CPU per request
# (/proc/PID/stat), and Herald's peak RSS (VmHWM). Only 127.0.0.1 is loaded;
# every run is bounded by -n and by `timeout`.
set -euo pipefail
cd "$(dirname "$0")/.."

N_MANY=${N_MANY:-200000}     # requests per -c16 -m32 run
N_CONN=${N_CONN:-3000}       # connections (one request each) per handshake run
CONN_RATE=${CONN_RATE:-400}  # connections started per 0.1 s (h2load -r; at most N_CONN): above what the server can take
(( CONN_RATE > N_CONN )) && CONN_RATE=$N_CONN
ROUNDS=${ROUNDS:-3}          # interleaved rounds; medians are reported
H2LOAD_THREADS=${H2LOAD_THREADS:-1}
RUN_TIMEOUT=${RUN_TIMEOUT:-180}

if [[ -z "${SKIP_BUILD:-}" && -z "${HERALD_BIN:-}" ]]; then
    swift build -c release --product herald >&2
fi
BIN=${HERALD_BIN:-.build/release/herald}
WORK=$(mktemp -d /tmp/herald-tls-bench.XXXXXX)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

"$BIN" tls-selfsigned --out "$WORK/pki" > /dev/null
CERT="$WORK/pki/server.crt"; KEY="$WORK/pki/server.key"
printf '\x00\x00\x00\x00\x00' > "$WORK/empty.bin"
mkdir -p "$WORK/www"
printf '\x00\x00\x00\x00\x02\x08\x01' > "$WORK/www/check"    # same size as the Health reply

source bench/lib/serve.sh
mkdir -p "$WORK/tls" "$WORK/h2c"
start_herald "$WORK/tls" --tls-cert "$CERT" --tls-key "$KEY"
TLS_PID=$HERALD_PID; TLS_PORT=$HERALD_PORT; PIDS+=("$TLS_PID")
start_herald "$WORK/h2c"
H2C_PID=$HERALD_PID; H2C_PORT=$HERALD_PORT; PIDS+=("$H2C_PID")

NGHTTPD_PORT=$(free_port)
nghttpd -n "${NGHTTPD_THREADS:-1}" -d "$WORK/www" "$NGHTTPD_PORT" "$KEY" "$CERT" > "$WORK/nghttpd.log" 2>&1 &
NGHTTPD_PID=$!; PIDS+=("$NGHTTPD_PID")
for _ in $(seq 1 200); do
    nghttp -t 1s "https://127.0.0.1:$NGHTTPD_PORT/check" > /dev/null 2>&1 && break
    sleep 0.05
done

GRPC_ARGS=(-d "$WORK/empty.bin" -H "content-type: application/grpc" -H "te: trailers")
HEALTH_TLS="https://127.0.0.1:$TLS_PORT/grpc.health.v1.Health/Check"
HEALTH_H2C="http://127.0.0.1:$H2C_PORT/grpc.health.v1.Health/Check"
NGHTTPD_URL="https://127.0.0.1:$NGHTTPD_PORT/check"

# Correctness once: grpc-status 0 over TLS (nghttp checks no certificate; grpcio does in the tests).
out=$(nghttp -v -t 5s "${GRPC_ARGS[@]}" "$HEALTH_TLS" 2>&1 | tr -d '\000')
grep -q "grpc-status: 0" <<< "$out" || { echo "FAIL: Health over TLS did not answer grpc-status 0" >&2; echo "$out" >&2; exit 1; }
grep -q "h2" <<< "$(h2load -n 1 -c 1 "${GRPC_ARGS[@]}" "$HEALTH_TLS" | grep 'Application protocol')" \
    || { echo "FAIL: ALPN h2 not negotiated" >&2; exit 1; }
echo "grpc-status 0 over TLS (ALPN h2) verified; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "binary: $BIN"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK=$(getconf CLK_TCK)

# run NAME PID URL N C M [extra h2load args...] -> one line; sets RPS_<NAME>
run() {
    local name=$1 pid=$2 url=$3 n=$4 c=$5 m=$6; shift 6
    local log="$WORK/$name.log" out before after
    before=$(cpu_ticks "$pid")
    out=$(timeout "$RUN_TIMEOUT" h2load -n "$n" -c "$c" -m "$m" -t "$H2LOAD_THREADS" --log-file="$log" "$@" "$url" 2>&1) \
        || { echo "h2load failed: $out" >&2; exit 1; }
    after=$(cpu_ticks "$pid")
    local rps succeeded secs pct
    rps=$(sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p' <<< "$out")
    secs=$(sed -n 's/^finished in \([0-9.]*\)\(m\{0,1\}s\),.*/\1 \2/p' <<< "$out" | awk '{print ($2=="ms") ? $1/1000 : $1}')
    succeeded=$(sed -n 's/.* \([0-9]*\) succeeded.*/\1/p' <<< "$out")
    [[ "$succeeded" == "$n" ]] || { echo "FAIL: $name: $succeeded of $n succeeded" >&2; echo "$out" >&2; exit 1; }
    pct=$(awk '{print $3}' "$log" | sort -n | awk '{a[NR]=$1} END {
        p50=a[int(NR*0.50)>0?int(NR*0.50):1]; p99=a[int(NR*0.99)>0?int(NR*0.99):1]; printf "%d %d", p50, p99 }')
    local cpu_us
    cpu_us=$(awk -v b="$before" -v a="$after" -v t="$TICK" -v n="$n" 'BEGIN { printf "%.1f", (a-b)/t*1e6/n }')
    printf "%-20s c=%-4s m=%-2s n=%-7s %10s req/s  %8.0f conn/s  p50=%6sus p99=%6sus  server CPU %6s us/req\n" \
        "$name" "$c" "$m" "$n" "$rps" "$(awk -v c="$c" -v s="$secs" -v m="$m" -v n="$n" 'BEGIN { print (n==c) ? c/s : 0 }')" \
        ${pct% *} ${pct#* } "$cpu_us"
    eval "RPS_${name//[-.]/_}+=(\"$rps\"); CONN_${name//[-.]/_}+=(\"$(awk -v c="$c" -v s="$secs" 'BEGIN { print c/s }')\")"
}

# Warm-up.
run warm-tls "$TLS_PID" "$HEALTH_TLS" 20000 16 32 "${GRPC_ARGS[@]}" > /dev/null
run warm-h2c "$H2C_PID" "$HEALTH_H2C" 20000 16 32 "${GRPC_ARGS[@]}" > /dev/null
run warm-nghttpd "$NGHTTPD_PID" "$NGHTTPD_URL" 20000 16 32 -d "$WORK/empty.bin" > /dev/null

RPS_herald_tls=(); RPS_nghttpd_tls=(); RPS_herald_h2c=(); CONN_herald_conn=(); CONN_nghttpd_conn=()
echo "== Health/Check -c 16 -m 32 ($ROUNDS interleaved rounds) =="
for round in $(seq 1 "$ROUNDS"); do
    run nghttpd-tls "$NGHTTPD_PID" "$NGHTTPD_URL" "$N_MANY" 16 32 -d "$WORK/empty.bin"
    run herald-tls "$TLS_PID" "$HEALTH_TLS" "$N_MANY" 16 32 "${GRPC_ARGS[@]}"
    run herald-h2c "$H2C_PID" "$HEALTH_H2C" "$N_MANY" 16 32 "${GRPC_ARGS[@]}"
done
HWM_TLS_C16=$(awk '$1 == "VmHWM:" {print $2}' "/proc/$TLS_PID/status")
HWM_H2C_C16=$(awk '$1 == "VmHWM:" {print $2}' "/proc/$H2C_PID/status")
echo "== new TLS connections: $N_CONN connections, one request each, started at up to $((CONN_RATE * 10))/s ($ROUNDS rounds) =="
for round in $(seq 1 "$ROUNDS"); do
    run nghttpd-conn "$NGHTTPD_PID" "$NGHTTPD_URL" "$N_CONN" "$N_CONN" 1 -r "$CONN_RATE" --rate-period 100ms -d "$WORK/empty.bin"
    run herald-conn "$TLS_PID" "$HEALTH_TLS" "$N_CONN" "$N_CONN" 1 -r "$CONN_RATE" --rate-period 100ms "${GRPC_ARGS[@]}"
done

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
T=$(median "${RPS_herald_tls[@]}"); N=$(median "${RPS_nghttpd_tls[@]}"); H=$(median "${RPS_herald_h2c[@]}")
CH=$(median "${CONN_herald_conn[@]}"); CN=$(median "${CONN_nghttpd_conn[@]}")
echo "== verdicts (medians) =="
awk -v t="$T" -v n="$N" 'BEGIN { r=t/n; printf "Health over TLS / nghttpd over TLS: %.0f / %.0f = %.2f (budget >= 0.8) %s\n", t, n, r, (r>=0.8?"PASS":"FAIL") }'
awk -v t="$T" -v h="$H" 'BEGIN { r=t/h; printf "Health over TLS / Herald h2c: %.0f / %.0f = %.2f (budget >= 0.6) %s\n", t, h, r, (r>=0.6?"PASS":"FAIL") }'
awk -v t="$CH" -v n="$CN" 'BEGIN { r=t/n; printf "new TLS connections/s, Herald / nghttpd: %.0f / %.0f = %.2f (budget >= 0.8) %s\n", t, n, r, (r>=0.8?"PASS":"FAIL") }'
# Per-round ratios (each pair ran back to back, so load drift cancels more): their median.
pair_median() {  # pair_median A[@] B[@] -> median of A[i]/B[i]
    local -n a=$1 b=$2; local i out=()
    for i in "${!a[@]}"; do out+=("$(awk -v x="${a[$i]}" -v y="${b[$i]}" 'BEGIN { printf "%.3f", x/y }')"); done
    median "${out[@]}"
}
echo "per-round ratio medians: TLS/nghttpd-TLS $(pair_median RPS_herald_tls RPS_nghttpd_tls), TLS/h2c $(pair_median RPS_herald_tls RPS_herald_h2c), conn/s $(pair_median CONN_herald_conn CONN_nghttpd_conn)"
awk -v t="$HWM_TLS_C16" -v h="$HWM_H2C_C16" 'BEGIN { printf "peak RSS (VmHWM) after the -c 16 runs: Herald TLS %.1f MiB, Herald h2c %.1f MiB\n", t/1024, h/1024 }'
awk -v n="$N_CONN" '$1 == "VmHWM:" { printf "Herald (TLS) peak RSS after the handshake runs (up to %d connections open at once): %.1f MiB\n", n, $2/1024 }' "/proc/$TLS_PID/status"
