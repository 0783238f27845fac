"""24 × kill -9 during delivery, then SPEC §4's crash rule against what APNs
really received: Tests/interop/crash_cycles.py (the interop test runs the
same code with 4 kills). The simulator is `herald apns-sim --record` in its
own process (it survives the kills); Herald delivers to it through a token
route with `--durability process`; the simulator delays each answer
(--delay-ms) so pushes are in flight at every kill."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from herald_bench import BIN, ROOT, bench_tmp, loadavg, rmtree, crash_cycle_stubs

sys.path.insert(0, str(ROOT / "Tests" / "interop"))
from crash_cycles import CrashRun  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=24)
    ap.add_argument("--users", type=int, default=100)
    ap.add_argument("--per-user", type=int, default=100)
    ap.add_argument("--devices", type=int, default=2)
    ap.add_argument("--delay-ms", type=int, default=20)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()

    tmp = bench_tmp("herald-bench-crash-")
    run = CrashRun(BIN, crash_cycle_stubs(), tmp, users=a.users, per_user=a.per_user, devices=a.devices, delay_ms=a.delay_ms)
    t0 = time.monotonic()
    print(f"load average before: {loadavg()}")
    try:
        figures = run.run(kills=a.kills, timeout=600)
    finally:
        run.stop()
        if not a.keep:
            rmtree(tmp)
    print(f"elapsed {time.monotonic() - t0:.1f} s; load average after: {loadavg()}")
    labels = [
        ("kills", "kill -9s during delivery"),
        ("messages", "messages"),
        ("pushes", "pushes (message × device)"),
        ("delivered", "pushes APNs accepted"),
        ("lost", "lost (never delivered, not UNCONFIRMED)"),
        ("duplicates", "duplicates (same key and device twice)"),
        ("delivered_but_failed", "messages delivered but recorded FAILED"),
        ("failed", "messages FAILED"),
        ("sent", "messages SENT"),
        ("unconfirmed", "devices UNCONFIRMED"),
        ("unconfirmed_delivered", "  of which APNs had accepted"),
        ("unconfirmed_not_delivered", "  of which never reached APNs (killed between mark and write)"),
        ("messages_reaching_no_device", "messages that reached no device"),
        ("never_handed_over", "devices caught mid-push, never handed over"),
        ("never_handed_over_then_delivered", "  of which delivered after a restart"),
        ("never_handed_over_then_unconfirmed", "  of which sent after a restart, then caught by a later kill"),
    ]
    for key, label in labels:
        print(f"{label:64s} {figures[key]:>8}")
    print(json.dumps(figures))
    ok = (figures["lost"] == 0 and figures["duplicates"] == 0 and figures["delivered_but_failed"] == 0
          and figures["never_handed_over_then_delivered"] + figures["never_handed_over_then_unconfirmed"]
          == figures["never_handed_over"])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
