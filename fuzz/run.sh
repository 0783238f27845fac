#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer) of the gRPC deframer + gzip, every RPC's
# request decoding/validation/rendering, and the JSON parser/writer.
#
#   fuzz/run.sh [SECONDS_PER_TARGET] [TARGET…]     (default 120 s; deframer requests json tzif connectjson)
#
# Builds a release binary with -sanitize=fuzzer,address into .build-fuzz/,
# runs the targets one after the other (niced: the machine is shared), prints
# per target the executions, corpus size, coverage, CPU seconds and any
# finding, and exits 1 if any target found a crash, timeout, leak or OOM.
# New corpus entries go to .build-fuzz/corpus/<target>/ (not committed; copy
# the interesting ones to fuzz/corpus/), findings to .build-fuzz/findings/.
# Reproduce a finding without libFuzzer: swift build --product herald-fuzz &&
# .build/debug/herald-fuzz TARGET FILE.
# FUZZ_KEEP_GOING=1 runs libFuzzer in fork mode and goes on past crashes and
# timeouts; FUZZ_MAX_LEN overrides -max_len.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-120}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(deframer requests json tzif connectjson)
scratch=.build-fuzz

echo "== building herald-fuzz (release, -sanitize=fuzzer,address) in $scratch"
# The requests target reaches HeraldService's handlers through its
# `package` seam (OfflineHandlers), so no -enable-testing is needed.
nice -n 10 swift build -c release --scratch-path "$scratch" --product herald-fuzz \
  -Xswiftc -sanitize=fuzzer,address -Xswiftc -DHERALD_LIBFUZZER
bin="$(swift build -c release --scratch-path "$scratch" --show-bin-path)/herald-fuzz"

# Leak checks off by default: Swift's runtime caches and the requests
# target's store live for the whole process, and telling those from a leak
# per input is not worked out yet (set ASAN_OPTIONS to try).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=1}"
# Swift's own crash backtracer would catch the trap first (and trips ASan);
# libFuzzer must see the signal to save the input.
export SWIFT_BACKTRACE=enable=no
keep_going=()
[ "${FUZZ_KEEP_GOING:-0}" = 1 ] && keep_going=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)

status=0
summary=()
for target in "${targets[@]}"; do
  case "$target" in
    deframer) max_len=262144; extra=() ;;   # several messages and a gzip bomb fit
    json) max_len=65536; extra=(-dict=fuzz/json.dict) ;;
    requests) max_len=65536; extra=() ;;
    tzif) max_len=70000; extra=() ;;        # past TZif.maximumFileSize (64 KiB)
    connectjson) max_len=65536; extra=(-dict=fuzz/json.dict) ;;
    *) echo "unknown target $target (deframer, requests, json, tzif, connectjson)" >&2; exit 2 ;;
  esac
  max_len=${FUZZ_MAX_LEN:-$max_len}
  work="$scratch/corpus/$target"
  findings="$scratch/findings/$target"
  log="$scratch/logs/$target.log"
  rm -rf "$findings"  # a run reports its own findings only
  mkdir -p "$work" "$findings" "$(dirname "$log")"
  echo "== $target: ${seconds}s, max_len $max_len (log: $log)"
  TIMEFORMAT='%U %S'
  # A slow input is a finding (-timeout): the issue is about quadratic costs.
  { time HERALD_FUZZ_TARGET="$target" nice -n 10 "$bin" "$work" "fuzz/corpus/$target" \
      -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len="$max_len" \
      -artifact_prefix="$findings/" -print_final_stats=1 "${extra[@]}" "${keep_going[@]}" >"$log" 2>&1 ; } 2>"$log.time" || true
  read -r user sys <"$log.time"
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.0f", u + s }')
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  # Final stats are missing when the run stopped on a finding: use the last status line.
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  [ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' <<<"$last")
  cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(find "$work" -type f | wc -l)
  found=$(find "$findings" -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'leak-*' -o -name 'oom-*' -o -name 'slow-unit-*' \) | sort)
  line="$target: execs ${execs:-?}, corpus $corp inputs, cov ${cov:-?} ft ${ft:-?}, cpu ${cpu}s"
  if [ -n "$found" ]; then
    status=1
    line="$line, FINDINGS: $(tr '\n' ' ' <<<"$found")"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*Fatal error|ALARM)' "$log" | head -5 || true
  fi
  echo "$line"
  summary+=("$line")
done

echo "== summary"
printf '%s\n' "${summary[@]}"
exit $status
