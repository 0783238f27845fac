#!/usr/bin/env bash
# FCM client → simulator throughput over loopback TLS, against the APNs client
# → simulator in the same run (issue 12: FCM ≥ 0.8× APNs; FCM client peak RSS
# ≤ 64 MiB with 4,000 in flight).
#
# For each scenario (connections, requests in flight) it starts `herald
# apns-sim` and runs its load client (`herald apns-sim --bench-connect …`),
# then starts `herald fcm-sim` (RS256 assertions verified at its token
# endpoint, --quiet) and runs `herald fcm-sim --bench-connect …` (FCMClient:
# access token, HTTP/2 pool, error mapping, rate bucket set out of the way).
# Both simulators advertise the same SETTINGS_MAX_CONCURRENT_STREAMS
# (SIM_MAX_STREAMS, default 1000; real FCM advertises 100). Prints each
# client's line (rate, client CPU, peak RSS from getrusage) with the
# simulator's CPU and peak RSS (/proc), then FCM/APNs per scenario.
#
# Usage: bench/fcm.sh [notifications-per-scenario]   (default 100000;
#        HERALD_BIN overrides the binary)
#        BASELINE_BIN=/tmp/herald-old SKIP_BUILD=1 bench/fcm.sh   # A/B (bench/lib/ab.sh)
#        SIM_BIN=/tmp/herald-x …: every run's simulators from that binary, so an
#        A/B compares the clients alone (the simulator is the costlier side
#        of each notification and sets the pace on two cores)
set -euo pipefail
umask 077  # the keys made below are secrets: owner-only, as Herald requires
cd "$(dirname "$0")/.."

fcm_figures() {   # one run's output -> `name value` lines for bench/lib/ab.sh
    awk '/^(apns|fcm) connections=/ {
        for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
        n = $1 "-c" f["connections"] "-f" f["concurrency"]
        rate = f["rate"]; sub("/s", "", rate); print n "-rate/s", rate
        u = f["client_cpu_user"]; s = f["client_cpu_sys"]; sub("s", "", u); sub("s", "", s)
        print n "-client-cpu-s", u + s
        r = f["client_peak_rss"]; sub("MiB", "", r); print n "-client-rss-MiB", r
    }'
}
source bench/lib/ab.sh
ab_run fcm_figures bench/fcm.sh "$@"

COUNT="${1:-100000}"
SIM_MAX_STREAMS="${SIM_MAX_STREAMS:-1000}"
source bench/lib/release.sh
SIM_BIN="${SIM_BIN:-$HERALD_BIN}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
TICKS="$(getconf CLK_TCK)"

# APNs: an ES256 .p8 key. FCM: an RSA service-account key the simulator knows.
openssl ecparam -genkey -name prime256v1 -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$TMP/key.p8"
openssl ec -in "$TMP/key.p8" -pubout -out "$TMP/pub.pem" 2>/dev/null
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$TMP/rsa.pem" 2>/dev/null
openssl pkey -in "$TMP/rsa.pem" -pubout -out "$TMP/rsa-pub.pem"
PROJECT=bench-project
EMAIL=bench@bench-project.iam.gserviceaccount.com
printf '{"type":"service_account","project_id":"%s","private_key_id":"benchkid1","client_email":"%s","private_key":"%s"}\n' \
    "$PROJECT" "$EMAIL" "$(awk '{ printf "%s\\n", $0 }' "$TMP/rsa.pem")" > "$TMP/account.json"

# sim_figures PID -> ` sim_cpu_user=… sim_cpu_sys=… sim_peak_rss=…`, then stops the simulator.
sim_figures() {
    local pid="$1" stat utime stime hwm
    stat="$(cut -d' ' -f14,15 "/proc/$pid/stat")"
    utime="${stat% *}"; stime="${stat#* }"
    hwm="$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")"
    kill -TERM "$pid"
    wait "$pid" || true
    printf ' sim_cpu_user=%.2fs sim_cpu_sys=%.2fs sim_peak_rss=%.1fMiB' \
        "$(echo "$utime / $TICKS" | bc -l)" "$(echo "$stime / $TICKS" | bc -l)" "$(echo "$hwm / 1024" | bc -l)"
}

run_apns() {
    local connections="$1" concurrency="$2" line port client
    coproc SIM { exec "$SIM_BIN" apns-sim --port 0 --ca-out "$TMP/apns-ca.pem" --public-key "$TMP/pub.pem" \
        --key-id BENCHKEY1 --team-id BENCHTEAM1 --topics com.example.bench --max-streams "$SIM_MAX_STREAMS" --quiet; }
    local sim_pid="$SIM_PID"
    read -r line <&"${SIM[0]}"
    port="${line##*:}"
    client="$("$HERALD_BIN" apns-sim --bench-connect "127.0.0.1:$port" --bench-ca "$TMP/apns-ca.pem" \
        --bench-p8 "$TMP/key.p8" --key-id BENCHKEY1 --team-id BENCHTEAM1 \
        --bench-count "$COUNT" --bench-connections "$connections" --bench-concurrency "$concurrency")"
    echo "apns $client$(sim_figures "$sim_pid")"
}

run_fcm() {
    local connections="$1" concurrency="$2" line port token_url client
    coproc SIM { exec "$SIM_BIN" fcm-sim --port 0 --ca-out "$TMP/fcm-ca.pem" --max-streams "$SIM_MAX_STREAMS" --quiet \
        --account "project=$PROJECT email=$EMAIL kid=benchkid1 public-key=$TMP/rsa-pub.pem"; }
    local sim_pid="$SIM_PID"
    read -r line <&"${SIM[0]}"
    port="${line##*:}"
    read -r line <&"${SIM[0]}"   # certificate PATH
    read -r line <&"${SIM[0]}"   # token-url URL
    token_url="${line#token-url }"
    client="$("$HERALD_BIN" fcm-sim --bench-connect "127.0.0.1:$port" --bench-ca "$TMP/fcm-ca.pem" \
        --bench-service-account "$TMP/account.json" --bench-token-url "$token_url" \
        --bench-count "$COUNT" --bench-connections "$connections" --bench-concurrency "$concurrency")"
    echo "fcm $client$(sim_figures "$sim_pid")"
}

field() {   # field NAME LINE -> the value without its unit
    local value
    value="$(tr ' ' '\n' <<< "$2" | sed -n "s/^$1=//p")"
    echo "${value%%[a-zA-Z/]*}"
}

echo "# herald FCM vs APNs client bench: $COUNT messages per scenario, $(nproc) cores, sim max streams $SIM_MAX_STREAMS, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
for scenario in "1 1000" "4 1000" "4 4000"; do
    read -r connections concurrency <<< "$scenario"
    apns="$(run_apns "$connections" "$concurrency")"
    echo "$apns"
    fcm="$(run_fcm "$connections" "$concurrency")"
    echo "$fcm"
    apns_rate="$(field rate "$apns")"; fcm_rate="$(field rate "$fcm")"
    fcm_cpu="$(echo "$(field client_cpu_user "$fcm") + $(field client_cpu_sys "$fcm")" | bc -l)"
    apns_cpu="$(echo "$(field client_cpu_user "$apns") + $(field client_cpu_sys "$apns")" | bc -l)"
    ratio="$(echo "$fcm_rate / $apns_rate" | bc -l)"
    rss="$(field client_peak_rss "$fcm")"
    printf 'c%s-f%s: FCM/APNs rate %.3f (budget >= 0.80: %s); client CPU per message APNs %.1f us, FCM %.1f us; FCM client peak RSS %s MiB (budget <= 64: %s); load %s\n' \
        "$connections" "$concurrency" "$ratio" "$( (( $(echo "$ratio >= 0.8" | bc -l) )) && echo met || echo MISSED)" \
        "$(echo "$apns_cpu * 1000000 / $COUNT" | bc -l)" "$(echo "$fcm_cpu * 1000000 / $COUNT" | bc -l)" \
        "$rss" "$( (( $(echo "$rss <= 64" | bc -l) )) && echo met || echo MISSED)" "$(cut -d' ' -f1-3 /proc/loadavg)"
done
