#!/usr/bin/env bash
# Server instructions per grpc.health.v1.Health/Check call, counted by
# callgrind: repeatable whatever else the machine runs (wall-clock rates are
# not, on a shared machine). The proxy for bench/rpc.sh's Health A/B budget.
#
#   bench/engine-instructions.sh                         # release build, then .build/release/herald
#   bench/engine-instructions.sh /tmp/herald-old .build/release/herald   # several binaries, in order
#   N=10000 ROUNDS=2 KEEP=/tmp/cg bench/engine-instructions.sh BIN...
#
# Per binary: `herald serve` (a copy without debug info, for valgrind) (the flags of bench/lib/serve.sh) under
# `valgrind --tool=callgrind`; a warm-up; then per round h2load -c16 -m32 -t1
# makes N and then 2N Health/Check calls (the empty request, as bench/rpc.sh
# sends it), callgrind dumping (and zeroing) its counters after each. The
# difference of the two dumps is the cost of N calls with the fixed costs
# (16 connections, their setup and teardown) cancelled; divided by N it is
# instructions per call, all server threads together. bench/lib/callgrind_diff.py
# prints it with calls per call of malloc, swift_retain, swift_release, … and
# the top functions by exclusive and inclusive instructions per call.
#
# RPC=schedule counts durable Schedules instead (bench/schedule-instructions.sh):
# bench/schedule.sh's request (`schedule_request`, no idempotency key: the
# server makes one), `GroupCommitWriter.loop()` in the inclusive list being
# the writer thread's share. Group commits gather differently under callgrind
# than at full speed, so compare binaries within one run.
#
# callgrind runs the server ~50x slower: keep N modest (default 20000). Only
# 127.0.0.1 is loaded; every step is bounded by `timeout`.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-20000}
ROUNDS=${ROUNDS:-1}
TOP=${TOP:-25}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
PY=${PY:-python3}

if [[ $# -eq 0 ]]; then
    [[ -n "${SKIP_BUILD:-}" ]] || swift build -c release --product herald >&2
    set -- .build/release/herald
fi
for tool in valgrind callgrind_control h2load; do
    command -v "$tool" > /dev/null || { echo "engine-instructions: $tool not found" >&2; exit 2; }
done

WORK=$(mktemp -d /tmp/herald-cg-bench.XXXXXX)
HERALD_PID=""
cleanup() {
    if [[ -n "$HERALD_PID" ]]; then
        kill "$HERALD_PID" 2>/dev/null || true
        wait "$HERALD_PID" 2>/dev/null || true
    fi
    if [[ -n "${KEEP:-}" ]]; then mkdir -p "$KEEP" && cp -r "$WORK"/. "$KEEP"/ && echo "kept in $KEEP"; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
case "${RPC:-health}" in
    health)
        printf '\x00\x00\x00\x00\x00' > "$WORK/empty.bin"           # framed empty message
        RPC_PATH=grpc.health.v1.Health/Check ;;
    schedule)
        "$PY" -c "import sys,time; sys.path.insert(0,\"bench/lib\"); from herald_bench import *; open(\"$WORK/empty.bin\",\"wb\").write(framed(schedule_request(user=\"user-000042\", key=\"\", after=time.time()+86400)))"
        RPC_PATH=herald.v1.PushService/Schedule ;;
    *) echo "engine-instructions: RPC is health or schedule" >&2; exit 2 ;;
esac
# valgrind 3.19 dies on libdispatch's sigsuspend (bench/lib/valgrind-sigsuspend.c).
"${CC:-cc}" -O2 -shared -fPIC -o "$WORK/sigsuspend.so" bench/lib/valgrind-sigsuspend.c

health() {  # health PORT CALLS (of RPC_PATH)
    local out
    out=$(timeout "$RUN_TIMEOUT" h2load -n "$2" -c 16 -m 32 -t 1 -d "$WORK/empty.bin" \
        -H "content-type: application/grpc" -H "te: trailers" "http://127.0.0.1:$1/$RPC_PATH" 2>&1) \
        || { echo "h2load failed: $out" >&2; return 1; }
    grep -q " $2 succeeded" <<< "$out" || { echo "h2load: not all $2 succeeded: $out" >&2; return 1; }
}

# dump PID LABEL: callgrind writes (and zeroes) its counters; waits for the file.
dump() {
    local before
    before=$(find "$WORK/$1" -name 'callgrind.out*' | wc -l)
    timeout 120 callgrind_control -d "$2" "$HERALD_PID" > /dev/null
    for _ in $(seq 1 1200); do
        (( $(find "$WORK/$1" -name 'callgrind.out*' | wc -l) > before )) && break
        sleep 0.1
    done
    ls -t "$WORK/$1"/callgrind.out* | head -1
}

index=0
for bin in "$@"; do
    index=$((index + 1))
    [[ -x "$bin" ]] || { echo "engine-instructions: $bin is not an executable" >&2; exit 2; }
    dir="bin$index"
    mkdir -p "$WORK/$dir"
    # Valgrind 3.19 cannot read the DWARF 5 that Swift writes: a copy without
    # debug info (the symbol table stays, so functions keep their names).
    strip --strip-debug -o "$WORK/$dir/herald" "$bin"
    LD_PRELOAD="$WORK/sigsuspend.so" valgrind --tool=callgrind --callgrind-out-file="$WORK/$dir/callgrind.out" --dump-instr=no \
        "$WORK/$dir/herald" serve --port 0 --data-dir "$WORK/$dir/data" --log-level warning \
        > "$WORK/$dir/herald.out" 2> "$WORK/$dir/herald.err" &
    HERALD_PID=$!
    for _ in $(seq 1 1200); do     # 120 s: startup under callgrind is slow
        grep -q "listening on" "$WORK/$dir/herald.out" 2>/dev/null && break
        kill -0 "$HERALD_PID" 2>/dev/null || { cat "$WORK/$dir/herald.err" >&2; exit 1; }
        sleep 0.1
    done
    port=$(sed -n 's/.*listening on [^:]*:\([0-9]*\).*/\1/p' "$WORK/$dir/herald.out" | head -1)
    [[ -n "$port" ]] || { echo "herald did not report its port" >&2; exit 1; }
    health "$port" 2000                                        # warm-up
    dump "$dir" warmup > /dev/null
    echo "== $bin (N=$N) =="
    for round in $(seq 1 "$ROUNDS"); do
        health "$port" "$N"
        short=$(dump "$dir" "short$round")
        health "$port" $((2 * N))
        long=$(dump "$dir" "long$round")
        if (( round == ROUNDS )); then
            "$PY" bench/lib/callgrind_diff.py "$short" "$long" "$N" --top "$TOP"
        else
            "$PY" bench/lib/callgrind_diff.py "$short" "$long" "$N" --top 0
        fi
    done
    kill -TERM "$HERALD_PID"
    timeout 120 tail --pid="$HERALD_PID" -f /dev/null || true
    wait "$HERALD_PID" 2>/dev/null || true
    HERALD_PID=""
done
