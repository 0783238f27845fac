#!/usr/bin/env bash
# Issue 26's release budget (bench/lib/policy_release.py): 1,000,000 held
# messages of one bundle released at once (their quiet hours end) vs the plain
# dispatch of as many, the same binary, SQLite; meanwhile another bundle's due
# pushes (p99 lateness) and transactional pushes of the held bundle.
#   HERALD_BIN=<herald> bench/policy-release.sh [-n 1000000] [--users 1000] [--b-rate 200] [--tx 5]
# Only loopback is loaded; bounded by -n and --timeout.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/release.sh
export HERALD_BIN
exec "${PY:-.venv/bin/python}" bench/lib/policy_release.py "$@"
