#!/usr/bin/env bash
# Issue 26's dispatch budget (bench/lib/policy_dispatch.py): dispatch with a
# delivery policy that holds nothing vs without one, the same binary,
# alternating rounds; prints both rates, CPU per message and the ratio.
#   HERALD_BIN=<herald> bench/policy.sh [-n 50000] [--users 2000] [--rounds 3]
# Only loopback is loaded; bounded by -n and --timeout.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/release.sh
export HERALD_BIN
exec "${PY:-.venv/bin/python}" bench/lib/policy_dispatch.py "$@"
