"""Issue 26's dispatch budget: the same binary dispatching N messages with no
delivery policy, then with a policy on the bundle that holds nothing
(quiet hours twelve hours away in the devices' zone, two caps far above the
load, max-per-second far above the rate) — every alert push still pays for
the zone lookup, the verdict, the counted-sends read and the ledger
reservation. Rounds alternate; medians of the dispatch rate (first progress →
all sent) and of the server CPU per message; the budget is ≥ 0.9×.

Usage: bench/policy.sh [-n 50000] [--users 2000] [--rounds 3]"""
from __future__ import annotations

import argparse
import datetime as dt
import statistics
from zoneinfo import ZoneInfo

import dispatch
from herald_bench import BUNDLE, loadavg


def policy_spec() -> str:
    # Register_users puts every device in Europe/Zurich: quiet hours there, 12 h from now, for one minute.
    start = dt.datetime.now(ZoneInfo("Europe/Zurich")) + dt.timedelta(hours=12)
    end = start + dt.timedelta(minutes=1)
    return (f"bundles={BUNDLE} quiet-hours={start:%H:%M}-{end:%H:%M} cap=100000/1h cap=1000000/7d "
            f"max-per-second=1000000")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=50_000)
    # Users, not a handful: a cap counts per user, and 2,500 counted sends
    # per user an hour is not a load any person is sent.
    ap.add_argument("--users", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300)
    a = ap.parse_args()
    # Many users schedule slower than a few: T0 leaves them time (n/400 + 10 s).
    base = dict(lead=a.n / 400 + 10, n=a.n, users=a.users, record=False, timeout=a.timeout, keep=False, log_level="warning", perf="",
                mixed=False, vs_apns=False, apns_connections=1, apns_concurrency=1000, rounds=1)
    rates = {"without": [], "with": []}
    cpus = {"without": [], "with": []}
    for round_ in range(a.rounds):
        for side in ("without", "with"):
            args = argparse.Namespace(**base, server_arg=[] if side == "without" else ["--delivery-policy", policy_spec()])
            print(f"== round {round_ + 1}/{a.rounds}, {side} a policy (loadavg {loadavg()})", flush=True)
            rates[side].append(dispatch.measure(args, android=0))
            cpus[side].append(dispatch.LAST_CPU_US[0])
    r_without, r_with = statistics.median(rates["without"]), statistics.median(rates["with"])
    c_without, c_with = statistics.median(cpus["without"]), statistics.median(cpus["with"])
    print(f"policy dispatch: medians of {a.rounds}: without {r_without:,.0f} msg/s ({c_without:.0f} µs CPU/msg), "
          f"with {r_with:,.0f} msg/s ({c_with:.0f} µs CPU/msg): rate {r_with / r_without:.2f}x, "
          f"CPU {c_with / c_without:.2f}x (budget rate >= 0.90x); spec: {policy_spec()}")


if __name__ == "__main__":
    main()
