#!/usr/bin/env bash
# APNs client → simulator throughput over loopback TLS (release build).
#
# For each scenario it starts `herald apns-sim` (JWT signatures verified,
# --quiet: no per-delivery log lines), runs the load client (`herald apns-sim
# --bench-connect …`), and prints notifications/s, client CPU and peak RSS
# (from the client's getrusage) and simulator CPU and peak RSS (/proc).
#
# Usage: bench/apns.sh [notifications-per-scenario]   (default 200000;
#        HERALD_BIN overrides the binary)
#        BASELINE_BIN=/tmp/herald-old SKIP_BUILD=1 bench/apns.sh   # A/B: old and
#        new binary alternating (AB_ROUNDS rounds), medians (bench/lib/ab.sh)
set -euo pipefail
umask 077  # the keys made below are secrets: owner-only, as Herald requires
cd "$(dirname "$0")/.."

apns_figures() {   # one run's output -> `name value` lines for bench/lib/ab.sh
    awk '/^connections=/ {
        for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
        n = "c" f["connections"] "-f" f["concurrency"]
        rate = f["rate"]; sub("/s", "", rate); print n "-rate/s", rate
        u = f["client_cpu_user"]; s = f["client_cpu_sys"]; sub("s", "", u); sub("s", "", s)
        print n "-client-cpu-s", u + s
        u = f["sim_cpu_user"]; s = f["sim_cpu_sys"]; sub("s", "", u); sub("s", "", s)
        print n "-sim-cpu-s", u + s
    }'
}
source bench/lib/ab.sh
ab_run apns_figures bench/apns.sh "$@"

COUNT="${1:-200000}"
source bench/lib/release.sh
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
openssl ecparam -genkey -name prime256v1 -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$TMP/key.p8"
openssl ec -in "$TMP/key.p8" -pubout -out "$TMP/pub.pem" 2>/dev/null
TICKS="$(getconf CLK_TCK)"

run() {
    local connections="$1" concurrency="$2"
    coproc SIM { exec "$HERALD_BIN" apns-sim --port 0 --ca-out "$TMP/ca.pem" --public-key "$TMP/pub.pem" \
        --key-id BENCHKEY1 --team-id BENCHTEAM1 --topics com.example.bench --quiet; }
    local sim_pid="$SIM_PID" line
    read -r line <&"${SIM[0]}"
    local port="${line##*:}"
    local client
    client="$("$HERALD_BIN" apns-sim --bench-connect "127.0.0.1:$port" --bench-ca "$TMP/ca.pem" \
        --bench-p8 "$TMP/key.p8" --key-id BENCHKEY1 --team-id BENCHTEAM1 \
        --bench-count "$COUNT" --bench-connections "$connections" --bench-concurrency "$concurrency")"
    local stat utime stime hwm
    stat="$(cut -d' ' -f14,15 "/proc/$sim_pid/stat")"
    utime="${stat% *}"; stime="${stat#* }"
    hwm="$(awk '/VmHWM/ {print $2}' "/proc/$sim_pid/status")"
    kill -TERM "$sim_pid"
    wait "$sim_pid" || true
    printf '%s sim_cpu_user=%.2fs sim_cpu_sys=%.2fs sim_peak_rss=%.1fMiB\n' "$client" \
        "$(echo "$utime / $TICKS" | bc -l)" "$(echo "$stime / $TICKS" | bc -l)" "$(echo "$hwm / 1024" | bc -l)"
}

echo "# herald APNs bench: $COUNT notifications per scenario, $(nproc) cores, $(date -u +%FT%TZ)"
run 1 1000
run 4 1000
run 4 4000
