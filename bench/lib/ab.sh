# Sourced by bench scripts for an A/B run, old and new binary in one run:
#
#   BASELINE_BIN=/tmp/herald-old SKIP_BUILD=1 bench/render.sh ...
#
# With BASELINE_BIN set, `ab_run FIGURES SCRIPT ARGS...` runs SCRIPT ARGS
# AB_ROUNDS times (default 3) for each binary, baseline and new alternating
# (HERALD_BIN=$BASELINE_BIN, then HERALD_BIN=${HERALD_BIN:-.build/release/herald}),
# prints each run's figures with the load average, then the median of each
# figure per binary and new/baseline, and exits. FIGURES is a function that
# reads one run's output on stdin and prints `name value` lines (name without
# spaces). Without BASELINE_BIN it returns at once and the script runs as usual.
ab_run() {
    [[ -n "${BASELINE_BIN:-}" ]] || return 0
    local figures=$1 script=$2
    shift 2
    local new="${HERALD_BIN:-.build/release/herald}"
    if [[ -z "${HERALD_BIN:-}" && -z "${SKIP_BUILD:-}" ]]; then
        swift build -c release --product herald >&2
    fi
    [[ -x "$BASELINE_BIN" && -x "$new" ]] || { echo "ab: $BASELINE_BIN or $new is not an executable" >&2; exit 2; }
    local all out side bin round figs
    all=$(mktemp)
    echo "A/B: baseline $BASELINE_BIN, new $new; ${AB_ROUNDS:-3} rounds alternating; $(nproc) cores"
    for round in $(seq 1 "${AB_ROUNDS:-3}"); do
        for side in baseline new; do
            if [[ "$side" == baseline ]]; then bin="$BASELINE_BIN"; else bin="$new"; fi
            local load
            load=$(cut -d' ' -f1-3 /proc/loadavg)
            out=$(BASELINE_BIN='' HERALD_BIN="$bin" SKIP_BUILD=1 "$script" "$@" 2>&1) \
                || { echo "$out" >&2; echo "ab: $script failed with $bin" >&2; rm -f "$all"; exit 1; }
            figs=$("$figures" <<< "$out")
            [[ -n "$figs" ]] || { echo "$out" >&2; echo "ab: no figures in the output" >&2; rm -f "$all"; exit 1; }
            echo "round $round $side (load $load): $(tr '\n' ' ' <<< "$figs")"
            sed "s/^/$side /" <<< "$figs" >> "$all"
        done
    done
    echo "medians of ${AB_ROUNDS:-3} (load average now $(cut -d' ' -f1-3 /proc/loadavg)):"
    awk '
        { k = $2; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
          c = ++count[$1, k]; v[$1, k, c] = $3 }
        function median(side, k,    i, j, t, m, a) {
            m = count[side, k]
            for (i = 1; i <= m; i++) a[i] = v[side, k, i]
            for (i = 2; i <= m; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
            return a[int((m + 1) / 2)]
        }
        END {
            for (i = 1; i <= n; i++) {
                o = median("baseline", order[i]); w = median("new", order[i])
                printf "  %-24s baseline %12s   new %12s   new/baseline %s\n", order[i], o, w,
                    (o + 0 != 0 ? sprintf("%.3f", w / o) : "-")
            }
        }' "$all"
    rm -f "$all"
    exit 0
}
