#!/usr/bin/env bash
# Core rendering micro-benchmark: builds herald-bench in release and runs it.
#   bench/core.sh [iterations] [name filter]   (filter TZ: the time-zone conversions only)
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product herald-bench
exec "$(swift build -c release --show-bin-path)/herald-bench" "${1:-1000000}" ${2:+"$2"}
