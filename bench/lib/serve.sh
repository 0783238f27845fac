# Sourced by bench scripts: starts `$BIN serve` on 127.0.0.1 port 0 with its
# data in "$1/data" and its output in "$1/herald.{out,err}", and waits
# (bounded: 10 s) for `listening on`. Sets HERALD_PID and HERALD_PORT.
start_herald() {
    local work=$1
    shift
    "$BIN" serve --port 0 --data-dir "$work/data" --log-level warning "$@" > "$work/herald.out" 2> "$work/herald.err" &
    HERALD_PID=$!
    for _ in $(seq 1 200); do
        grep -q "listening on" "$work/herald.out" 2>/dev/null && break
        kill -0 "$HERALD_PID" 2>/dev/null || { cat "$work/herald.err" >&2; return 1; }
        sleep 0.05
    done
    HERALD_PORT=$(sed -n 's/.*listening on [^:]*:\([0-9]*\).*/\1/p' "$work/herald.out" | head -1)
    [[ -n "$HERALD_PORT" ]] || { echo "herald did not report its port" >&2; return 1; }
}
