#!/usr/bin/env bash
# The second README command: install what is missing, build, and run every
# test: the Generated/ drift check, Swift unit/integration tests, and the
# interop suite (Python grpcio and raw HTTP/2 against the real binary).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/bootstrap.sh --test

echo "== Generated/ in sync with Protos/"
scripts/gen-protos.sh --check

echo "== swift build (warnings are errors in spirit: none allowed)"
build_log=$(mktemp)
swift build --build-tests 2>&1 | tee "$build_log"
if grep -E "warning:" "$build_log" | grep -v "^warning: '.*': " | grep -q .; then
  echo "swift build produced warnings:" >&2
  grep -E "warning:" "$build_log" >&2
  exit 1
fi

# A throwaway PostgreSQL cluster for the PostgreSQL store's tests (Swift
# and interop): stopped and removed when this script ends, failed or not.
echo "== PostgreSQL test cluster"
cluster_env=$(scripts/pg-test-cluster.sh start)
eval "$cluster_env"
trap 'scripts/pg-test-cluster.sh stop "$HERALD_TEST_POSTGRES_DIR"' EXIT

echo "== swift test"
swift test --skip-build

if [[ "${HERALD_PACKAGE:-1}" != 0 ]]; then
  # The deployable binary, checked by Tests/interop/test_packaging.py
  # (HERALD_PACKAGE=0 skips the release build, and those tests).
  echo "== scripts/package.sh"
  scripts/package.sh
  export HERALD_PACKAGED_BIN="$root/dist/latest/bin/herald"
fi

echo "== interop (pytest)"
HERALD_BIN="$root/.build/debug/herald" .venv/bin/python -m pytest -q Tests/interop
