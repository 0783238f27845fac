#!/usr/bin/env bash
# HTTP/2 conformance: h2spec (summerwind/h2spec 2.x, built by
# ../shared/tools/h2spec-build.sh (beside the project root) into /tmp/h2spec) against `herald serve`.
#
#   bench/h2spec.sh                     # debug build of herald
#   HERALD_BIN=.build/release/herald bench/h2spec.sh
#
# Prints h2spec's report; the last line is the count (bench/RESULTS.md names
# each remaining failure and why it stays).
set -euo pipefail
cd "$(dirname "$0")/.."

H2SPEC=${H2SPEC:-/tmp/h2spec}
BIN=${HERALD_BIN:-.build/debug/herald}
[[ -x "$H2SPEC" ]] || { echo "no h2spec at $H2SPEC (run ../shared/tools/h2spec-build.sh (beside the project root))" >&2; exit 1; }
[[ -n "${SKIP_BUILD:-}" || "$BIN" != .build/debug/herald ]] || swift build --product herald >&2

WORK=$(mktemp -d /tmp/herald-h2spec.XXXXXX)
HERALD_PID=""
cleanup() {
    [[ -n "$HERALD_PID" ]] && kill "$HERALD_PID" 2>/dev/null || true
    [[ -n "$HERALD_PID" ]] && wait "$HERALD_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

source bench/lib/serve.sh
start_herald "$WORK"
PORT=$HERALD_PORT

# -o: per-test timeout (s); failures that wait for a frame that never comes cost this each.
timeout 600 "$H2SPEC" -h 127.0.0.1 -p "$PORT" -o "${H2SPEC_TIMEOUT:-5}" || true
