#!/usr/bin/env bash
# Builds the self-contained `herald` binary for deployment: release mode,
# the Swift standard library and Foundation linked statically
# (--static-swift-stdlib), so the server needs only Debian's runtime
# libraries (docs/DEPLOYING.md), never the Swift toolchain.
#
#   scripts/package.sh [OUT_DIR]    default dist/
#
# Writes OUT_DIR/herald-<version>-linux-<arch>/ (bin/herald without debug
# information, the service unit, DEPENDS: the Debian packages the binary
# links against), a .tar.gz of it, its debug information as
# OUT_DIR/herald-<version>-linux-<arch>.debug and OUT_DIR/latest (a link to
# it), after checking the binary: `ldd` finds every library and none in the
# toolchain, and it answers --version and --help.
# The build has its own scratch directory (.build-package), so it does not
# disturb the debug and release builds in .build. It builds every target of
# the package, not only the herald product (the fuzz targets and herald-bench
# too): `swift build -c release` with no arguments must succeed on a fresh
# clone, and this is CI's only release build, so a release-only compile
# failure (e.g. a `@testable import` outside the tests) fails CI here.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${1:-dist}
scratch=${PACKAGE_SCRATCH:-.build-package}

command -v swift >/dev/null || { echo "package: swift not found on PATH" >&2; exit 2; }
toolchain=$(cd "$(dirname "$(readlink -f "$(command -v swift)")")/../.." && pwd)

echo "== swift build -c release --static-swift-stdlib, every target (scratch $scratch)"
swift build -c release --static-swift-stdlib --scratch-path "$scratch"
bin="$scratch/release/herald"

version=$("$bin" --version)
arch=$(uname -m)
name="herald-$version-linux-$arch"
stage="$out/$name"
rm -rf "$stage" "$out/$name.tar.gz"
mkdir -p "$stage/bin"
# Shipped without DWARF (≈ 65 MB of it): the debug information goes beside
# the tarball as $name.debug, linked by .gnu_debuglink so gdb finds it; the
# symbol table stays, so perf and gdb still name functions.
rm -f "$out/$name.debug"
objcopy --only-keep-debug "$bin" "$out/$name.debug"
objcopy --strip-debug --add-gnu-debuglink="$out/$name.debug" "$bin" "$stage/bin/herald"
cp deploy/herald.service "$stage/"

# What the binary needs at run time: every library ldd resolves, none from
# the toolchain, none missing.
libs=$(ldd "$stage/bin/herald")
if grep -q "not found" <<<"$libs"; then
  echo "package: unresolved libraries:" >&2; grep "not found" <<<"$libs" >&2; exit 1
fi
if grep -qF "$toolchain/" <<<"$libs"; then
  echo "package: libraries resolve into the Swift toolchain ($toolchain):" >&2
  grep -F "$toolchain/" <<<"$libs" >&2; exit 1
fi
# The Debian packages owning them (dpkg -S), one per line.
awk '/=> \// { print $3 }' <<<"$libs" | while read -r lib; do
  dpkg -S "$(readlink -f "$lib")" 2>/dev/null || dpkg -S "$lib" 2>/dev/null || echo "unknown($lib)"
done | cut -d: -f1 | sort -u > "$stage/DEPENDS"

"$stage/bin/herald" --help >/dev/null
tar -C "$out" -czf "$out/$name.tar.gz" "$name"
ln -sfn "$name" "$out/latest"
echo "packaged $stage/bin/herald ($(du -h "$stage/bin/herald" | cut -f1)) and $out/$name.tar.gz"
echo "runtime packages: $(paste -sd' ' "$stage/DEPENDS")"
