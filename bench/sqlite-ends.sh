#!/usr/bin/env bash
# SQLite's own instructions per dispatched push (claim, hand-over mark,
# outcome, end), as schema changes would make them: bench/lib/sqlite_ends.py
# under callgrind for K and 2K pushes, (Ir(2K) - Ir(K)) / K, collecting inside
# sqlite3_step only. Minutes, no release build; load does not move it.
#
#   HERALD_BIN=<herald> bench/sqlite-ends.sh [--script PY] [-k K] [CHANGE.sql ...]
#
# The first line is the schema as shipped (bench/lib/sqlite_ends.py); each
# CHANGE.sql after it (e.g. bench/experiments/sqlite-ends/*.sql) is applied to
# a copy of a fresh database, run with --script (default the same script), and
# printed with its difference. HERALD_BIN makes the fresh
# database (`herald serve`, stopped at once); Python's sqlite3 must load the
# libsqlite3 the server links (checked). Only 127.0.0.1 is used.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
SCRIPT=bench/lib/sqlite_ends.py
K=1000
while [[ $# -gt 0 ]]; do
    case "$1" in
        --script) SCRIPT=$2; shift 2 ;;
        -k) K=$2; shift 2 ;;
        *) break ;;
    esac
done
[[ -n "${HERALD_BIN:-}" && -x "$HERALD_BIN" ]] || { echo "sqlite-ends: set HERALD_BIN to a herald binary" >&2; exit 2; }
command -v valgrind > /dev/null || { echo "sqlite-ends: valgrind not found" >&2; exit 2; }
server_lib=$(ldd "$HERALD_BIN" | awk '/libsqlite3/ {print $3}')
py_version=$("$PY" -c 'import sqlite3; print(sqlite3.sqlite_version)')
echo "server links ${server_lib:-its own SQLite}; Python's sqlite3 is $py_version"
WORK=$(mktemp -d /tmp/herald-sqlite-ends.XXXXXX)
pid=""
cleanup() { [[ -n "$pid" ]] && kill "$pid" 2> /dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
"$HERALD_BIN" serve --port 0 --data-dir "$WORK/data" --log-level warning > "$WORK/serve.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
    grep -q "listening" "$WORK/serve.log" && break
    kill -0 "$pid" 2> /dev/null || { cat "$WORK/serve.log" >&2; exit 1; }
    sleep 0.1
done
grep -q "listening" "$WORK/serve.log" || { echo "sqlite-ends: the server did not start" >&2; exit 1; }
kill "$pid"; wait "$pid" 2> /dev/null || true; pid=""
cp "$WORK/data/herald.sqlite" "$WORK/fresh.sqlite"
echo "SELECT 1;" > "$WORK/shipped.sql"
per_push() {  # SCRIPT CHANGE.sql -> SQLite instructions per push
    local script=$1 change=$2 k total=()
    for k in "$K" $((2 * K)); do
        timeout 1800 valgrind --tool=callgrind --toggle-collect=sqlite3_step --callgrind-out-file="$WORK/cg.$k" \
            "$PY" "$script" "$WORK/fresh.sqlite" "$WORK/out.sqlite" $((2 * K)) "$k" "$change" > "$WORK/run.log" 2>&1 \
            || { cat "$WORK/run.log" >&2; return 1; }
        total+=("$(awk '/^(summary|totals):/ {print $2; exit}' "$WORK/cg.$k")")
    done
    echo $(((total[1] - total[0]) / K))
}
base=$(per_push bench/lib/sqlite_ends.py "$WORK/shipped.sql")
printf '%-48s %9s\n' "schema as shipped (bench/lib/sqlite_ends.py)" "$base"
for change in "$@"; do
    n=$(per_push "$SCRIPT" "$change")
    printf '%-48s %9s  %+d (%+.1f %%)\n' "$(basename "$change")" "$n" $((n - base)) "$(echo "100 * ($n - $base) / $base" | bc -l)"
done
