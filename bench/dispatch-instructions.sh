#!/usr/bin/env bash
# Server instructions per dispatched message, counted by callgrind (what
# load does not move): bench/lib/dispatch_instructions.py says how.
#
#   HERALD_BIN=<release herald> bench/dispatch-instructions.sh [N] [USERS]   (default 2000, 20)
#   TOP=60 KEEP=/tmp/cg …   (more functions; keep the dumps)
#   RATE=40 …   scheduling rate assumed under callgrind (default 120 a
#               second): lower on a busy machine, for a longer lead to T0
#   SERVER_ARGS="--route-in-flight 8 --route-queue 0" …   extra `herald serve`
#               arguments (this one: every message parked by a full route,
#               released and claimed again, is counted)
#   MODE=release …   per message released from a hold (quiet hours) vs per
#                    plainly dispatched one, same server
#                    (bench/lib/release_instructions.py; LEAD=seconds to the
#                    quiet end)
# Only 127.0.0.1 is loaded; every wait is bounded.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-2000}
USERS=${2:-20}
PY=${PY:-.venv/bin/python}
source bench/lib/release.sh
for tool in valgrind callgrind_control h2load; do
    command -v "$tool" > /dev/null || { echo "dispatch-instructions: $tool not found" >&2; exit 2; }
done
WORK=$(mktemp -d /tmp/herald-dispatch-cg.XXXXXX)
cleanup() {
    if [[ -n "${KEEP:-}" ]]; then mkdir -p "$KEEP" && cp -r "$WORK"/. "$KEEP"/ && echo "kept in $KEEP"; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
# valgrind 3.19: a copy without DWARF (it cannot read Swift's), and
# libdispatch's sigsuspend made safe (bench/lib/valgrind-sigsuspend.c).
strip --strip-debug -o "$WORK/herald" "$HERALD_BIN"
"${CC:-cc}" -O2 -shared -fPIC -o "$WORK/sigsuspend.so" bench/lib/valgrind-sigsuspend.c
cat > "$WORK/herald-cg" <<WRAP
#!/bin/sh
exec env LD_PRELOAD="$WORK/sigsuspend.so" valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.out" \
    --dump-instr=no "$WORK/herald" "\$@" 2>>"$WORK/valgrind.err"
WRAP
chmod +x "$WORK/herald-cg"
HERALD_BIN="$WORK/herald-cg" PYTHONPATH=bench/lib timeout 7200 "$PY" "bench/lib/${MODE:-dispatch}_instructions.py" "$N" "$USERS" "$WORK" "${TOP:-40}"
