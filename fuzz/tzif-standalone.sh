#!/usr/bin/env bash
# The tzif target without the rest of HeraldFuzz: HeraldPrimitives, TimeZones
# and fuzz/Sources/HeraldFuzz/TZifTarget.swift compiled with swiftc
# (release, -sanitize=fuzzer,address) into .build-fuzz/tzif/, then libFuzzer
# on fuzz/corpus/tzif for SECONDS (default 120), niced. Seconds of compiling
# instead of fuzz/run.sh's whole-service ASan build.
#   fuzz/tzif-standalone.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-120}
out=.build-fuzz/tzif
mkdir -p "$out/corpus" "$out/findings"
flags=(-sanitize=fuzzer,address -O -swift-version 6 -parse-as-library -wmo -I "$out")
cat > "$out/main.swift" <<'SWIFT'
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    TZifTarget.run(Array(UnsafeRawBufferPointer(start: data, count: size)))
    return 0
}
SWIFT
nice -n 10 swiftc "${flags[@]}" -module-name HeraldPrimitives -emit-module -emit-module-path "$out/HeraldPrimitives.swiftmodule" \
  -c $(find Sources/HeraldPrimitives -name '*.swift') -o "$out/primitives.o"
nice -n 10 swiftc "${flags[@]}" -module-name TimeZones -emit-module -emit-module-path "$out/TimeZones.swiftmodule" \
  -c Sources/TimeZones/*.swift -o "$out/timezones.o"
nice -n 10 swiftc "${flags[@]}" -module-name TZifFuzz -c "$out/main.swift" fuzz/Sources/HeraldFuzz/TZifTarget.swift -o "$out/main.o"
swiftc -sanitize=fuzzer,address "$out/primitives.o" "$out/timezones.o" "$out/main.o" -lm -o "$out/tzif-fuzz" 2>/dev/null
cp fuzz/corpus/tzif/* "$out/corpus/"
ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=1}" SWIFT_BACKTRACE=enable=no \
  nice -n 10 "$out/tzif-fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=70000 \
  -artifact_prefix="$out/findings/" -print_final_stats=1 "$out/corpus"
