#!/usr/bin/env bash
# Read side budgets on a store of 1M messages (issue 10): GetMessage at
# -c16 -m32 beside durable Schedule in the same run, and CampaignReport over
# 1M messages of one campaign (<= 1 s).
#   bench/messages.sh [--messages 1000000] [-n 100000] [-c 16] [-m 32]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
[ -x .build/release/herald ] || swift build -c release --product herald
exec "$PY" bench/lib/messages.py "$@"
