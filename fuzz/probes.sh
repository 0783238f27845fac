#!/usr/bin/env bash
# Times the scaling probes (fuzz/probes.py) with the fuzz binary, one input
# per process, niced: each probe at 1,000 … 8,000 elements. A time ratio near
# 4 per doubling is a quadratic cost. Run fuzz/run.sh first (it builds).
#
#   fuzz/probes.sh [TIMEOUT_SECONDS]     (default 60 per input)
set -euo pipefail
cd "$(dirname "$0")/.."
timeout=${1:-60}
bin=.build-fuzz/release/herald-fuzz
[ -x "$bin" ] || { echo "no $bin: run fuzz/run.sh first" >&2; exit 2; }
rm -rf .build-fuzz/probes
.venv/bin/python fuzz/probes.py .build-fuzz/probes >/dev/null
export SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0
for dir in .build-fuzz/probes/*/; do
  target=$(basename "$dir")
  for probe in $(ls "$dir" | sed 's/-[0-9]*$//' | sort -u); do
    line="$target/$probe:"
    for file in $(ls "$dir" | grep "^$probe-[0-9]*$" | sort -t- -k"$(($(tr -cd - <<<"$probe" | wc -c) + 2))"n); do
      n=${file##*-}
      ms=$(HERALD_FUZZ_TARGET="$target" nice -n 10 "$bin" -timeout="$timeout" "$dir$file" 2>&1 \
        | sed -n 's/^Executed .* in \([0-9]*\) ms$/\1/p' || true)  # a timeout prints no time
      line="$line $n=${ms:->${timeout}000}ms"
    done
    echo "$line"
  done
done
