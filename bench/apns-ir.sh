#!/usr/bin/env bash
# The APNs client's instructions per notification (callgrind Ir), two
# binaries side by side: a figure that load on a shared 2-core machine does
# not move (bench/fcm.sh's rates swing ±15 % between runs of one binary).
# For each scenario (connections × in flight) each binary's load client
# (`herald apns-sim --bench-connect …`) runs under callgrind twice, N and 2N
# notifications, against a native `herald apns-sim`; (Ir(2N) − Ir(N)) / N
# is the cost of one notification with start-up and connections cancelled.
# DWARF is stripped from a copy of each binary first (valgrind 3.19 cannot
# read lld's). Prints Ir per notification and new/baseline per scenario;
# at equal IPC, rate new/baseline ≈ 1 / that ratio. With WITH_FCM=1 the new
# binary's FCM client (`herald fcm-sim --bench-connect`, RS256 service
# account, token endpoint on the simulator) is counted the same way, and
# FCM/APNs instructions per notification printed (issue 12's FCM ≥ 0.8×
# APNs, at equal IPC: APNs Ir / FCM Ir ≥ 0.8).
#
# Usage: BASELINE_BIN=old/herald HERALD_BIN=new/herald [WITH_FCM=1] bench/apns-ir.sh [N]   (default 10000)
# Only loopback is loaded; each run is bounded by N and a timeout.
set -euo pipefail
umask 077
cd "$(dirname "$0")/.."
: "${BASELINE_BIN:?BASELINE_BIN=<the baseline herald binary>}"
: "${HERALD_BIN:?HERALD_BIN=<the new herald binary>}"
N=${1:-10000}
command -v valgrind >/dev/null || { echo "apns-ir: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
TMP=$(mktemp -d)
SIM_PID=
trap '[[ -n "$SIM_PID" ]] && kill "$SIM_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
openssl ecparam -genkey -name prime256v1 -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$TMP/key.p8"
openssl ec -in "$TMP/key.p8" -pubout -out "$TMP/pub.pem" 2>/dev/null
objcopy --strip-debug "$BASELINE_BIN" "$TMP/baseline"
if [[ "${WITH_FCM:-0}" == 1 ]]; then
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$TMP/rsa.pem" 2>/dev/null
    openssl pkey -in "$TMP/rsa.pem" -pubout -out "$TMP/rsa-pub.pem"
    printf '{"type":"service_account","project_id":"bench-project","private_key_id":"benchkid1","client_email":"%s","private_key":"%s"}\n' \
        "bench@bench-project.iam.gserviceaccount.com" "$(awk '{ printf "%s\\n", $0 }' "$TMP/rsa.pem")" > "$TMP/account.json"
fi
objcopy --strip-debug "$HERALD_BIN" "$TMP/new"

# ir BIN PORT COUNT CONNS CONC -> total Ir of one client run
ir() {
    timeout 600 valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.out" "$1" apns-sim --bench-connect "127.0.0.1:$2" \
        --bench-ca "$TMP/ca.pem" --bench-p8 "$TMP/key.p8" --key-id BENCHKEY1 --team-id BENCHTEAM1 \
        --bench-count "$3" --bench-connections "$4" --bench-concurrency "$5" >/dev/null 2>"$TMP/vg.log"
    awk '/Collected/ {print $4}' "$TMP/vg.log" | grep . || { tail -5 "$TMP/vg.log" >&2; exit 1; }
}

# fcm_ir BIN PORT TOKEN_URL COUNT CONNS CONC -> total Ir of one FCM client run
fcm_ir() {
    timeout 600 valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.out" "$1" fcm-sim --bench-connect "127.0.0.1:$2" \
        --bench-ca "$TMP/fcm-ca.pem" --bench-service-account "$TMP/account.json" --bench-token-url "$3" \
        --bench-count "$4" --bench-connections "$5" --bench-concurrency "$6" >/dev/null 2>"$TMP/vg.log"
    awk '/Collected/ {print $4}' "$TMP/vg.log" | grep . || { tail -5 "$TMP/vg.log" >&2; exit 1; }
}

echo "APNs client instructions per notification (callgrind, N=$N and 2N): baseline $BASELINE_BIN, new $HERALD_BIN"
for scenario in "1 1000" "4 1000" "4 4000"; do
    read -r conns conc <<<"$scenario"
    declare -A per=()
    for side in baseline new; do
        mkfifo "$TMP/sim.out"
        "$TMP/$side" apns-sim --port 0 --ca-out "$TMP/ca.pem" --public-key "$TMP/pub.pem" --key-id BENCHKEY1 \
            --team-id BENCHTEAM1 --topics com.example.bench --max-streams 1000 --quiet >"$TMP/sim.out" &
        SIM_PID=$!
        read -r line <"$TMP/sim.out"; rm -f "$TMP/sim.out"
        port="${line##*:}"
        a=$(ir "$TMP/$side" "$port" "$N" "$conns" "$conc")
        b=$(ir "$TMP/$side" "$port" $((2 * N)) "$conns" "$conc")
        kill "$SIM_PID"; wait "$SIM_PID" 2>/dev/null || true; SIM_PID=
        per[$side]=$(( (b - a) / N ))
    done
    printf 'apns %dx%d: baseline %d Ir, new %d Ir per notification, new/baseline %.3f\n' \
        "$conns" "$conc" "${per[baseline]}" "${per[new]}" "$(echo "${per[new]} / ${per[baseline]}" | bc -l)"
    if [[ "${WITH_FCM:-0}" == 1 ]]; then
        mkfifo "$TMP/sim.out"
        "$TMP/new" fcm-sim --port 0 --ca-out "$TMP/fcm-ca.pem" --max-streams 1000 --quiet \
            --account "project=bench-project email=bench@bench-project.iam.gserviceaccount.com kid=benchkid1 public-key=$TMP/rsa-pub.pem" \
            >"$TMP/sim.out" 2>/dev/null &
        SIM_PID=$!
        exec 3<"$TMP/sim.out"
        read -r line <&3; port="${line##*:}"
        read -r line <&3   # certificate PATH
        read -r line <&3; token_url="${line#token-url }"
        exec 3<&-; rm -f "$TMP/sim.out"
        a=$(fcm_ir "$TMP/new" "$port" "$token_url" "$N" "$conns" "$conc")
        b=$(fcm_ir "$TMP/new" "$port" "$token_url" $((2 * N)) "$conns" "$conc")
        kill "$SIM_PID"; wait "$SIM_PID" 2>/dev/null || true; SIM_PID=
        fcm=$(( (b - a) / N ))
        printf 'fcm %dx%d (new): %d Ir per notification; APNs/FCM instructions %.3f (at equal IPC, FCM rate / APNs rate)\n' \
            "$conns" "$conc" "$fcm" "$(echo "${per[new]} / $fcm" | bc -l)"
    fi
done
