#!/usr/bin/env bash
# The first README command: install what is missing, build, and run Herald on
# its embedded defaults (127.0.0.1:50051, store under ./data). Extra arguments
# go to `herald serve`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/bootstrap.sh
swift build -c release --product herald
exec .build/release/herald serve "$@"
