#!/usr/bin/env bash
# The operator console's budgets (issue 29) on a store of 1M messages: each
# page's time (median/p99 over -n fetches on one keep-alive connection,
# budget <= 50 ms) and size (<= 100 KB); gRPC Health and Schedule rates with
# a browser-like poller fetching the overview every second vs without, same
# server, alternating rounds (budget >= 0.97x).
#   HERALD_BIN=<herald> bench/console.sh [--messages 1000000] [-n 50] [--rounds 2]
# The store is seeded with SQL in one transaction (bench/lib/messages.py's
# fill: one bundle, 10,000 users, finished messages), then half of the
# messages are moved to 1,000 small campaigns; the other half stay in one
# campaign of ~500,000 (CampaignReport's worst case). Run it under the
# shared bench lock (flock). Only loopback; bounded by -n and the rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib/release.sh
export HERALD_BIN
exec "${PY:-.venv/bin/python}" bench/lib/console_bench.py "$@"
