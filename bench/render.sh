#!/usr/bin/env bash
# Render RPC throughput and latency over loopback h2c, against Herald's own
# Health/Check as the baseline (release build).
#
# Starts `herald serve --port 0` on a temporary data dir, builds one realistic
# localized RenderRequest with the Python stubs (grpc_tools.protoc from
# Protos/), checks that a Render call with exactly those bytes answers
# grpc-status 0 with the expected APNs payload (h2load counts any HTTP 200 as
# success), then drives Health/Check and Render with h2load at
# `-c 16 -m 32` and `-c 1 -m 1`. Prints req/s, p50/p99 latency (from h2load's
# --log-file) and the server's peak RSS (VmHWM) and CPU time.
#
# The anchor: ../shared/anchors/cpp-render (ANCHOR_DIR), a grpc C++ 1.51
# callback server that only parses the same RenderRequest with the generated
# C++ classes and answers a copy of Herald's own reply (captured here). It is
# built once into .build/anchor-cpp-render (needs libgrpc++-dev and
# protobuf-compiler-grpc; ANCHOR_BIN=path reuses a binary, ANCHOR=0 skips
# it) and driven with the same bytes and h2load parameters at -c 16 -m 32 and
# -c 1 -m 1, as the `anchor` rows. Printed ratios: Render rate Herald/anchor
# and Herald's server CPU per call Render/Health.
#
# Usage: bench/render.sh [requests at -c16 -m32] [requests at -c1 -m1]
#        (default 200000 and 20000; HERALD_BIN, PYTHON override the binary
#        and the interpreter with grpcio-tools)
#        BASELINE_BIN=/tmp/herald-old SKIP_BUILD=1 bench/render.sh   # A/B: old and
#        new binary alternating (AB_ROUNDS rounds), medians (bench/lib/ab.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

render_figures() {   # one run's output -> `name value` lines for bench/lib/ab.sh
    awk '($1 == "health" || $1 == "render" || $1 == "anchor") && $7 == "req/s" {
        n = $1 "-c" $3; print n "-req/s", $6
        for (i = 1; i <= NF; i++) {
            if ($i == "p50") print n "-p50-us", $(i + 1)
            if ($i == "p99") print n "-p99-us", $(i + 1)
            if ($i == "us/req") print n "-cpu-us/req", $(i - 1)
        } }
        $1 == "ratio" { print $2, $3 }'
}
source bench/lib/ab.sh
ab_run render_figures bench/render.sh "$@"

BIG="${1:-200000}"
SMALL="${2:-20000}"
PYTHON="${PYTHON:-.venv/bin/python}"
source bench/lib/release.sh
TMP="$(mktemp -d)"
SERVER_PID=""
ANCHOR_PID=""
stop() {   # pid: TERM, up to 10 s, then KILL
    if [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; then
        kill -TERM "$1" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$1" 2>/dev/null || true
    fi
}
cleanup() {
    stop "$SERVER_PID"
    stop "$ANCHOR_PID"
    rm -rf "$TMP"
}
trap cleanup EXIT

cat >"$TMP/helper.py" <<'PYEOF'
"""Written by bench/render.sh: builds the Render request body once, and
checks that one Render call with exactly those bytes answers grpc-status 0
with the expected APNs rendering (h2load counts any HTTP 200 as success).

  render_helper.py body  <stubs-dir> <out-file>   write the 5-byte-framed request
  render_helper.py check <stubs-dir> <body-file> <host:port>
"""
from __future__ import annotations

import json
import pathlib
import sys

import os
PROTOS = pathlib.Path(os.environ["HERALD_PROTOS"])
TOKEN = "7f" * 32

EXPECTED_PAYLOAD = (
    '{"aps":{"alert":{"title":"Deine Bestellung ist unterwegs","subtitle":"Ankunft Donnerstag",'
    '"body":"Verfolge Paket 1Z999 und sieh das Lieferfenster in der App.","launch-image":"splash"},'
    '"badge":3,"sound":"chime.caf","thread-id":"orders","category":"ORDER_UPDATE","mutable-content":1,'
    '"interruption-level":"time-sensitive"},'
    '"amount":42.5,"deeplink":"shop://orders/A-10023","items":3,'
    '"meta":{"carrier":"UPS","express":true,"legs":[1,2]},"order_id":"A-10023",'
    '"ctx_idempotency_key":"order-A-10023-shipped","ctx_image_url":"https://cdn.example.com/parcels/a10023.jpg"}'
)


def generate(out: str):
    from grpc_tools import protoc

    protos = sorted(str(p.relative_to(PROTOS)) for p in PROTOS.rglob("*.proto")
                    if not str(p).startswith(str(PROTOS / "google")))
    include = pathlib.Path(protoc.__file__).parent / "_proto"
    rc = protoc.main(["protoc", f"-I{PROTOS}", f"-I{include}", f"--python_out={out}",
                      f"--grpc_python_out={out}", *protos])
    if rc != 0:
        sys.exit("grpc_tools.protoc failed")


def modules(out: str):
    sys.path.insert(0, out)
    import importlib

    return importlib.import_module("herald.v1.types_pb2"), importlib.import_module("herald.v1.push_service_pb2")


def request(t, p):
    from google.protobuf import struct_pb2

    def struct(value):
        s = struct_pb2.Struct()
        s.update(value)
        return s

    return p.RenderRequest(
        bundle_id="com.example.shop", platform=t.PLATFORM_IOS, priority=t.PRIORITY_HIGH,
        ttl_seconds=3600, collapse_id="order-A-10023", idempotency_key="order-A-10023-shipped",
        locale="de-CH", device_token=TOKEN,
        content=t.Content(
            title=t.LocalizedText(translations={
                "en": "Your order has shipped", "de": "Deine Bestellung ist unterwegs",
                "fr": "Votre commande est en route"}),
            subtitle=t.LocalizedText(translations={
                "en": "Arriving Thursday", "de": "Ankunft Donnerstag", "fr": "Arrivée jeudi"}),
            body=t.LocalizedText(translations={
                "en": "Track parcel 1Z999 and see the delivery window in the app.",
                "de": "Verfolge Paket 1Z999 und sieh das Lieferfenster in der App.",
                "fr": "Suivez le colis 1Z999 et consultez le créneau dans l’app."}),
            default_locale="en", sound="chime.caf", badge=3, thread_id="orders",
            image_url="https://cdn.example.com/parcels/a10023.jpg", category="ORDER_UPDATE",
            user_info=struct({"order_id": "A-10023", "amount": 42.5, "items": 3,
                              "deeplink": "shop://orders/A-10023",
                              "meta": {"carrier": "UPS", "express": True, "legs": [1, 2]}}),
        ),
        ios=struct({"aps": {"alert": {"launch-image": "splash"}, "interruption-level": "time-sensitive"}}),
    )


def main():
    cmd, out = sys.argv[1], sys.argv[2]
    if cmd == "body":
        generate(out)
        t, p = modules(out)
        raw = request(t, p).SerializeToString()
        framed = b"\x00" + len(raw).to_bytes(4, "big") + raw
        pathlib.Path(sys.argv[3]).write_bytes(framed)
        print(f"request body: {len(raw)} bytes (+5 framing)")
        return
    if cmd == "check":
        import grpc

        t, p = modules(out)
        framed = pathlib.Path(sys.argv[3]).read_bytes()
        raw = framed[5:]
        assert len(raw) == int.from_bytes(framed[1:5], "big")
        with grpc.insecure_channel(sys.argv[4]) as channel:
            # Send exactly the bytes h2load sends (no re-serialization).
            render = channel.unary_unary("/herald.v1.PushService/Render",
                                         request_serializer=lambda _: raw,
                                         response_deserializer=p.RenderResponse.FromString)
            reply, call = render.with_call(None, timeout=10)
            assert call.code() == grpc.StatusCode.OK, call.code()
        apns = reply.apns
        assert reply.WhichOneof("rendering") == "apns"
        assert apns.path == f"/3/device/{TOKEN}", apns.path
        assert apns.payload_json == EXPECTED_PAYLOAD, apns.payload_json
        assert apns.payload_bytes == len(EXPECTED_PAYLOAD.encode()) == 560
        json.loads(apns.payload_json)
        headers = dict(apns.headers)
        assert headers["apns-topic"] == "com.example.shop" and headers["apns-priority"] == "10", headers
        assert headers["apns-collapse-id"] == "order-A-10023" and headers["apns-push-type"] == "alert", headers
        assert reply.resolved_locale == "de", reply.resolved_locale
        print(f"check: Render grpc-status 0, payload {apns.payload_bytes} bytes as expected, "
              f"resolved_locale {reply.resolved_locale}, warnings {list(reply.warnings)}")
        return
    sys.exit(__doc__)


if __name__ == "__main__":
    main()
PYEOF

export HERALD_PROTOS="$PWD/Protos"
mkdir -p "$TMP/stubs" "$TMP/data"
"$PYTHON" "$TMP/helper.py" body "$TMP/stubs" "$TMP/render.bin"
printf '\x00\x00\x00\x00\x00' >"$TMP/health.bin"

"$HERALD_BIN" serve --port 0 --data-dir "$TMP/data" >"$TMP/stdout" 2>"$TMP/stderr" &
SERVER_PID=$!
PORT=""
for _ in $(seq 200); do   # ≤ 20 s for the first stdout line
    line="$(head -n1 "$TMP/stdout" 2>/dev/null || true)"
    if [[ "$line" =~ listening\ on\ 127\.0\.0\.1:([0-9]+) ]]; then PORT="${BASH_REMATCH[1]}"; break; fi
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$TMP/stderr" >&2; echo "herald exited" >&2; exit 1; }
    sleep 0.1
done
[[ -n "$PORT" ]] || { echo "herald did not report its port" >&2; exit 1; }
echo "herald pid $SERVER_PID on 127.0.0.1:$PORT; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

"$PYTHON" "$TMP/helper.py" check "$TMP/stubs" "$TMP/render.bin" "127.0.0.1:$PORT"

# The anchor (see the header): built once, fed the reply Herald just gave.
ANCHOR_DIR="${ANCHOR_DIR:-../shared/anchors/cpp-render}"
ANCHOR_PORT=""
ANCHOR_NOTE=""
if [[ "${ANCHOR:-1}" == 0 ]]; then
    ANCHOR_NOTE="skipped (ANCHOR=0)"
elif [[ -z "${ANCHOR_BIN:-}" ]]; then
    ANCHOR_BIN=.build/anchor-cpp-render/build/render_server
    if [[ ! -d "$ANCHOR_DIR" ]]; then
        ANCHOR_NOTE="not built: $ANCHOR_DIR is missing"
    elif ! command -v grpc_cpp_plugin >/dev/null || ! pkg-config --exists grpc++; then
        ANCHOR_NOTE="not built: grpc_cpp_plugin or grpc++ missing (apt-get install libgrpc++-dev protobuf-compiler-grpc)"
    elif [[ ! -x "$ANCHOR_BIN" || -n "$(find "$ANCHOR_DIR" Protos/herald -newer "$ANCHOR_BIN" -type f | head -1)" ]]; then
        rm -rf .build/anchor-cpp-render && mkdir -p .build && cp -r "$ANCHOR_DIR" .build/anchor-cpp-render
        .build/anchor-cpp-render/build.sh "$PWD/Protos" >"$TMP/anchor-build.log" 2>&1 \
            || ANCHOR_NOTE="not built: build.sh failed: $(tail -n 3 "$TMP/anchor-build.log" | tr '\n' ' ')"
    fi
fi
if [[ -z "$ANCHOR_NOTE" ]]; then
    "$PYTHON" "$ANCHOR_DIR/capture_response.py" "127.0.0.1:$PORT" "$TMP/stubs" "$TMP/render.bin" "$TMP/reply.bin"
    ANCHOR_PORT="$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    "$ANCHOR_BIN" "$ANCHOR_PORT" "$TMP/reply.bin" >/dev/null 2>"$TMP/anchor.stderr" &
    ANCHOR_PID=$!
    for _ in $(seq 200); do   # ≤ 20 s
        grep -q "listening on" "$TMP/anchor.stderr" 2>/dev/null && break
        kill -0 "$ANCHOR_PID" 2>/dev/null || break
        sleep 0.1
    done
    if grep -q "listening on" "$TMP/anchor.stderr"; then
        echo "anchor: grpc C++ $(pkg-config --modversion grpc++ 2>/dev/null) render_server pid $ANCHOR_PID on 127.0.0.1:$ANCHOR_PORT"
    else
        ANCHOR_NOTE="did not start: $(tr '\n' ' ' <"$TMP/anchor.stderr")"
        stop "$ANCHOR_PID"; ANCHOR_PID=""
    fi
fi
[[ -z "$ANCHOR_NOTE" ]] || echo "anchor: $ANCHOR_NOTE; no anchor rows"

TICKS="$(getconf CLK_TCK)"
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

declare -A RATE CPU
run() {   # name path body clients streams requests [pid port]
    local name="$1" path="$2" body="$3" c="$4" m="$5" n="$6" pid="${7:-$SERVER_PID}" port="${8:-$PORT}"
    local log="$TMP/$name-c$c-m$m.log" out before after
    before="$(cpu_ticks "$pid")"
    # Bounded: -n requests, and every connection closes after 120 s at most.
    out="$(timeout 300 h2load -n "$n" -c "$c" -m "$m" -T 120 -d "$body" \
        -H 'content-type: application/grpc' -H 'te: trailers' --log-file="$log" \
        "http://127.0.0.1:$port$path")"
    after="$(cpu_ticks "$pid")"
    local rps ok
    rps="$(awk '/^finished in/ {gsub(",", "", $4); print $4}' <<<"$out")"
    ok="$(awk '/^status codes:/ {print $3}' <<<"$out")"
    RATE["$name-c$c"]="$rps"
    CPU["$name-c$c"]="$(awk -v t=$((after - before)) -v h="$TICKS" -v n="$n" 'BEGIN {print t / h / n * 1e6}')"
    local lat
    lat="$(awk -F'\t' '$2 == 200 {print $3}' "$log" | sort -n | awk '
        { v[NR] = $1 }
        END { if (NR == 0) { print "- -"; exit }
              p50 = v[int((NR - 1) * 0.50) + 1]; p99 = v[int((NR - 1) * 0.99) + 1]
              printf "%.0f %.0f", p50, p99 }')"
    local hwm
    hwm="$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")"
    printf '%-7s -c %-2s -m %-2s %9s req/s  2xx %6s/%-6s  p50 %6s us  p99 %6s us  server CPU %5.2f s = %5.1f us/req  VmHWM %5.1f MiB\n' \
        "$name" "$c" "$m" "$rps" "$ok" "$n" ${lat} "$(awk -v t=$((after - before)) -v h="$TICKS" 'BEGIN {print t / h}')" \
        "${CPU["$name-c$c"]}" "$(awk -v k="$hwm" 'BEGIN {print k / 1024}')"
}

run health /grpc.health.v1.Health/Check "$TMP/health.bin" 16 32 "$BIG"
run render /herald.v1.PushService/Render "$TMP/render.bin" 16 32 "$BIG"
[[ -z "$ANCHOR_PID" ]] || run anchor /herald.v1.PushService/Render "$TMP/render.bin" 16 32 "$BIG" "$ANCHOR_PID" "$ANCHOR_PORT"
run health /grpc.health.v1.Health/Check "$TMP/health.bin" 1 1 "$SMALL"
run render /herald.v1.PushService/Render "$TMP/render.bin" 1 1 "$SMALL"
[[ -z "$ANCHOR_PID" ]] || run anchor /herald.v1.PushService/Render "$TMP/render.bin" 1 1 "$SMALL" "$ANCHOR_PID" "$ANCHOR_PORT"

# A Render after the load still answers correctly.
"$PYTHON" "$TMP/helper.py" check "$TMP/stubs" "$TMP/render.bin" "127.0.0.1:$PORT" >/dev/null

awk -v r="${RATE[render-c16]}" -v h="${RATE[health-c16]}" 'BEGIN {
    ratio = r / h
    printf "Render / Health at -c 16 -m 32: %.2f (budget >= 0.75: %s)\n", ratio, (ratio >= 0.75 ? "met" : "NOT met") }'
# Issue 14's budgets, as `ratio NAME VALUE` lines (bench/lib/ab.sh takes their medians).
awk -v r="${CPU[render-c16]}" -v h="${CPU[health-c16]}" 'BEGIN {
    ratio = r / h
    printf "ratio render/health-cpu-c16 %.2f   Herald server CPU per call, Render / Health at -c 16 -m 32 (budget <= 4: %s)\n", ratio, (ratio <= 4 ? "met" : "NOT met") }'
if [[ -n "$ANCHOR_PID" ]]; then
    for c in 16 1; do
        awk -v r="${RATE[render-c$c]}" -v a="${RATE[anchor-c$c]}" -v c="$c" 'BEGIN {
            ratio = r / a
            printf "ratio render/anchor-rate-c%s %.2f   Render rate, Herald / grpc C++ anchor at -c %s%s\n", c, ratio, c,
                (c == 16 ? sprintf(" (budget >= 3: %s)", ratio >= 3 ? "met" : "NOT met") : "") }'
    done
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
