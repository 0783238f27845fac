#!/usr/bin/env bash
# Issue 25's budgets ("one delivery pipeline") in one run, the new binary
# against a baseline, on the same machine:
#
#   1. Health/Check -c 16 -m 32, binaries alternating (bench/rpc.sh A/B)   ≥ 0.97×
#   2. peak RSS under RPC load, each binary (bench/rpc.sh, VmHWM)          no higher
#   3. APNs and FCM clients → their simulators, alternating (bench/fcm.sh A/B)
#                                                    APNs ≥ 0.95×, FCM ≥ 0.8× APNs
#   4. dispatch rate, one SQLite replica, alternating (bench/dispatch.sh)  ≥ 0.97×
#   5. dispatch rate, two PostgreSQL replicas, each binary (bench/replicas.sh
#      --only dispatch; only with HERALD_TEST_POSTGRES_URL set)            ≥ 0.97×
#
# Usage: BASELINE_BIN=old/herald HERALD_BIN=new/herald bench/pipeline.sh
#   N_FCM (notifications per FCM/APNs scenario, default 100000),
#   N_DISPATCH (messages per dispatch run, default 50000), AB_ROUNDS (default 3),
#   PARTS (default "rpc rss fcm dispatch replicas") picks parts.
# Only loopback is loaded; every part is bounded by its own counts and timeouts.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${BASELINE_BIN:?BASELINE_BIN=<the baseline herald binary>}"
: "${HERALD_BIN:?HERALD_BIN=<the new herald binary>}"
export AB_ROUNDS=${AB_ROUNDS:-3}
N_FCM=${N_FCM:-100000}
N_DISPATCH=${N_DISPATCH:-50000}
PARTS=${PARTS:-rpc rss fcm dispatch replicas}
PY=${PY:-.venv/bin/python}
want() { [[ " $PARTS " == *" $1 "* ]]; }

echo "pipeline A/B: baseline $BASELINE_BIN, new $HERALD_BIN; $(nproc) cores; loadavg $(cut -d' ' -f1-3 /proc/loadavg)"

if want rpc; then
    echo "== 1. Health/Check c16 m32, alternating ($AB_ROUNDS rounds)"
    BASELINE_BIN="$BASELINE_BIN" HERALD_BIN="$HERALD_BIN" SKIP_BUILD=1 N_MANY=${N_MANY:-200000} bench/rpc.sh \
        | sed 's/budget >= 95%/budget >= 97%/'
fi

if want rss; then
    echo "== 2. peak RSS under RPC load (bench/rpc.sh, each binary)"
    for side in baseline new; do
        if [[ $side == baseline ]]; then bin=$BASELINE_BIN; else bin=$HERALD_BIN; fi
        line=$(BASELINE_BIN='' HERALD_BIN="$bin" SKIP_BUILD=1 N_MANY=100000 N_ONE=5000 N_SOAK=400000 bench/rpc.sh \
            | grep 'peak RSS')
        echo "  $side: $line"
    done
fi

if want fcm; then
    echo "== 3. APNs and FCM clients → simulators, alternating ($AB_ROUNDS rounds, $N_FCM per scenario)"
    BASELINE_BIN="$BASELINE_BIN" HERALD_BIN="$HERALD_BIN" SKIP_BUILD=1 bench/fcm.sh "$N_FCM"
fi

if want dispatch; then
    echo "== 4. dispatch, one SQLite replica, $N_DISPATCH messages, alternating ($AB_ROUNDS rounds)"
    BASELINE_BIN="$BASELINE_BIN" HERALD_BIN="$HERALD_BIN" "$PY" bench/lib/dispatch.py --vs-apns \
        -n "$N_DISPATCH" --rounds "$AB_ROUNDS"
fi

if want replicas; then
    if [[ -z "${HERALD_TEST_POSTGRES_URL:-}" ]]; then
        echo "== 5. skipped: HERALD_TEST_POSTGRES_URL is not set (eval \"\$(scripts/pg-test-cluster.sh start)\")"
    else
        echo "== 5. dispatch, two PostgreSQL replicas, $N_DISPATCH messages, each binary"
        for side in baseline new; do
            if [[ $side == baseline ]]; then bin=$BASELINE_BIN; else bin=$HERALD_BIN; fi
            echo "  -- $side"
            HERALD_BIN="$bin" bench/replicas.sh --only dispatch -n "$N_DISPATCH" | grep -E 'dispatch|verdict|PASS|FAIL' | sed 's/^/  /'
        done
    fi
fi
