#!/usr/bin/env bash
# Installs what Herald needs and is missing: Debian/Ubuntu packages (as root,
# or through sudo) and a Python venv (.venv) with the test tools. Idempotent:
# does nothing that is already done. `--test` adds the packages only the
# tests need (scripts/test.sh passes it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

packages=(libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler libssl-dev libsqlite3-dev zlib1g-dev
          nghttp2-client nghttp2-server python3-venv pkg-config ca-certificates)
if [[ "${1:-}" == "--test" ]]; then
  # For the tests only (scripts/test.sh): Go stubs generated from Protos/ and
  # compiled offline (Tests/interop/test_stubs.py), and systemd-analyze for
  # deploy/herald.service (test_packaging.py). grpc-go 1.33 marshals through
  # github.com/golang/protobuf: its 1.5 shim handles protoc-gen-go's APIv2
  # messages (1.3, which apt would otherwise pick, panics on them).
  # PostgreSQL: the throwaway cluster the PostgreSQL store tests run
  # against (scripts/pg-test-cluster.sh). grpc C++: bench/render.sh builds the
  # grpc C++ Render anchor (../shared/anchors/cpp-render) with them.
  # prometheus: promtool checks and unit-tests deploy/prometheus
  # (Tests/interop/test_ops_kit.py). Chromium and tidy: the console's
  # browser test (Tests/interop/test_console.py).
  packages+=(protobuf-compiler golang-go protoc-gen-go protoc-gen-go-grpc golang-google-protobuf-dev
             golang-google-grpc-dev golang-github-golang-protobuf-1-5-dev systemd postgresql
             libgrpc++-dev protobuf-compiler-grpc prometheus chromium tidy)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}"
  sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

command -v swift >/dev/null || { echo "bootstrap: swift not found on PATH (Swift 6 toolchain required)" >&2; exit 2; }

# Python test tools, pinned loosely; reinstalled only when requirements change.
req="$root/Tests/interop/requirements.txt"
stamp="$root/.venv/.requirements.sha"
want=$(sha256sum "$req" | cut -d' ' -f1)
if [[ ! -x .venv/bin/python || ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
  echo "bootstrap: preparing Python venv (.venv)"
  python3 -m venv .venv
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -r "$req"
  echo "$want" > "$stamp"
fi
