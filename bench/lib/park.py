"""A provider slower than the scheduler: how much of the server's work goes to
messages parked by a full route (released, then claimed again).

`herald apns-sim --delay-ms D` in its own process answers every push after
D ms; Herald (`--durability process`, a token route to it, `--route-in-flight`
and `--route-queue` as given) has USERS × PER_USER messages due at once. The
route's pace is about in-flight / D; the scheduler claims faster, and what a
full route refuses gives its claim back and is claimed again later. Prints the
delivery rate (the simulator's record), the server's CPU per message and the
claims per message (`attempts`: one per claim, so a message parked once has
2), from the moment the messages fell due until the last was recorded.

    HERALD_BIN=<herald> .venv/bin/python bench/lib/park.py [--delay-ms 100] [--route-in-flight 256] [--route-queue 64]

The set-up (keys, simulator, route) is Tests/interop/crash_cycles.py's."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time

from herald_bench import BIN, ROOT, bench_tmp, crash_cycle_stubs, loadavg, process_cpu, rmtree, thread_cpu, thread_cpu_delta

sys.path.insert(0, str(ROOT / "Tests" / "interop"))
from crash_cycles import CrashRun  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--per-user", type=int, default=500)
    ap.add_argument("--delay-ms", type=int, default=100)
    ap.add_argument("--route-in-flight", type=int, default=256)
    ap.add_argument("--route-queue", type=int, default=64)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()

    tmp = bench_tmp("herald-bench-park-")
    run = CrashRun(BIN, crash_cycle_stubs(), tmp, users=a.users, per_user=a.per_user, devices=1, delay_ms=a.delay_ms)
    run.store_args = ["--route-in-flight", str(a.route_in_flight), "--route-queue", str(a.route_queue)]
    proc = None
    try:
        os.makedirs(run.data, exist_ok=True)
        run.start_simulator()
        proc, address = run.start_herald()
        lead = 3 + run.messages / 1500
        t_due = time.time() + lead
        run.schedule_all(address, lead_seconds=lead)
        if time.time() >= t_due:
            print("WARNING: scheduling ran past the due time; rerun with fewer messages")
        while time.time() < t_due - 0.05:
            time.sleep(0.01)
        print(f"{run.messages} messages due now, apns-sim answering after {a.delay_ms} ms, route "
              f"{a.route_in_flight} in flight + {a.route_queue} queued (load average {loadavg()})")
        cpu0, tc0, t0 = sum(process_cpu(proc.pid)), thread_cpu(proc.pid), time.monotonic()
        deadline = t0 + a.timeout
        while (n := run.record_count()) < run.messages:
            assert time.monotonic() < deadline, f"{n}/{run.messages} recorded after {a.timeout} s"
            time.sleep(0.02)
        t1, cpu1, tc1 = time.monotonic(), sum(process_cpu(proc.pid)), thread_cpu(proc.pid)
        # The ends are written after the record: wait for them before reading attempts.
        while run.waiting() > 0 or run.rows("SELECT count(*) FROM messages WHERE sending_since IS NOT NULL")[0][0]:
            assert time.monotonic() < deadline, "ends not written"
            time.sleep(0.05)
        claims, messages = run.rows("SELECT sum(attempts), count(*) FROM messages")[0]
        print(f"delivered {run.messages} in {t1 - t0:.2f} s → {run.messages / (t1 - t0):,.0f} msg/s "
              f"(route pace about {a.route_in_flight / a.delay_ms * 1000:,.0f}/s); server CPU {cpu1 - cpu0:.2f} s = "
              f"{(cpu1 - cpu0) / run.messages * 1e6:.0f} µs per message; claims per message {claims / messages:.2f} "
              f"(re-claims {claims - messages}); load average {loadavg()}")
        print(f"server threads CPU: {thread_cpu_delta(tc0, tc1)}")
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        run.stop()
        if not a.keep:
            rmtree(tmp)


if __name__ == "__main__":
    main()
