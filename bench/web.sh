#!/usr/bin/env bash
# Schedule over the ContextPush web API (HTTP/1.1 JSON) vs over gRPC, same
# server, alternating rounds: bench/web.sh [-n 50000] [-c 64] [--rounds 3]
# (bench/lib/web_bench.py says what it measures). HERALD_BIN overrides the binary.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
[ -n "${HERALD_BIN:-}" ] || [ -x .build/release/herald ] || swift build -c release --product herald
exec "$PY" bench/lib/web_bench.py "$@"
