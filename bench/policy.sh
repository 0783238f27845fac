#!/usr/bin/env bash
# Issue 26's dispatch budget (bench/lib/policy_dispatch.py): dispatch with a
# delivery policy that holds nothing vs without one, the same binary,
# alternating rounds; prints both rates, CPU per message and the ratio.
#   HERALD_BIN=<herald> bench/policy.sh [-n 50000] [--users 2000] [--rounds 3]
# The same on PostgreSQL replicas (budget >= 0.85x, 0 duplicates), on the throwaway cluster:
#   eval "$(scripts/pg-test-cluster.sh start)"
#   HERALD_BIN=<herald> bench/policy.sh --postgres [--replicas 2] [-n 20000] [--users 1000] [--rounds 3]
# --omit-max-per-second (or POLICY_OMIT_MAX_PER_SECOND=1): the policy without max-per-second
# (the PostgreSQL store refuses it until the shared throttle lands); by default it is in.
# Only loopback is loaded; bounded by -n and --timeout.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/release.sh
export HERALD_BIN
exec "${PY:-.venv/bin/python}" bench/lib/policy_dispatch.py "$@"
