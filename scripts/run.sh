#!/usr/bin/env bash
# The first README command: install what is missing, build, and run Herald on
# its embedded defaults (127.0.0.1:50051, store under ./data). Extra arguments
# go to `herald serve`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# The port first: a build of many minutes must not end in "Address already
# in use" (docs/TROUBLESHOOTING.md).
port=${HERALD_PORT:-50051}
host=${HERALD_HOST:-127.0.0.1}
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[$i]}" in
    --port) port=${args[$((i + 1))]:-$port} ;;
    --port=*) port=${args[$i]#--port=} ;;
    --host) host=${args[$((i + 1))]:-$host} ;;
    --host=*) host=${args[$i]#--host=} ;;
  esac
done
probe=$host
case "$probe" in 0.0.0.0 | "::" | "[::]") probe=127.0.0.1 ;; esac
if [ "$port" != 0 ] && (exec 3<>"/dev/tcp/$probe/$port") 2>/dev/null; then
  echo "run.sh: something already listens on $host:$port; stop it, or pick another port:" >&2
  echo "  scripts/run.sh --port 50052   (and point the client there: HERALD_ADDRESS=127.0.0.1:50052)" >&2
  exit 1
fi

scripts/bootstrap.sh
if [ ! -x .build/release/herald ]; then
  echo "run.sh: the first build compiles Herald and its Swift packages: 15-45 minutes on 2 cores; later builds take seconds"
fi
swift build -c release --product herald
exec .build/release/herald serve "$@"
