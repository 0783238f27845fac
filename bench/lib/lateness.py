"""Lateness: messages due at RATE per second for SECONDS seconds, in buckets of
STEP seconds. Bucket b is user b with its own device token, all its messages
due at T0 + b*STEP (deliver_after, grace 0, traditional). A reader thread
tails the simulator's record (--sim-record) every 2 ms and stamps each line's
arrival; lateness = arrival stamp − the bucket's due time (the device token in
the line names the bucket). The stamp includes the recorder's file write and
the ≤ 2 ms poll, so it slightly overstates the true send lateness."""
from __future__ import annotations

import argparse
import json
import os
import threading
import time

from herald_bench import (thread_cpu, thread_cpu_delta, Herald, bench_tmp, loadavg, pct, register_users, rmtree, schedule_bulk, tail_lines, token_for)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=int, default=10_000, help="messages due per second")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--step", type=float, default=0.1, help="seconds between due times")
    ap.add_argument("--lead", type=float, default=0, help="seconds from end of scheduling to T0 (default: estimate)")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()

    buckets = int(round(a.seconds / a.step))
    per = int(round(a.rate * a.step))
    n = buckets * per
    tmp = bench_tmp("herald-bench-lateness-")
    rec = os.path.join(tmp, "sim.jsonl")
    h = Herald(os.path.join(tmp, "data"), "--grace-seconds", "0", "--log-level", "warning", "--sim-record", rec)
    try:
        users = [f"late-user-{b:04d}" for b in range(buckets)]
        register_users(h, users)
        t0 = time.time() + (a.lead or (n / 6_000 + 5))
        due = {token_for(b): t0 + b * a.step for b in range(buckets)}
        t_sched = time.monotonic()
        ok = 0
        for b, u in enumerate(users):
            ok += schedule_bulk(h, tmp, u, per, after=due[token_for(b)])["succeeded"]
        sched_s = time.monotonic() - t_sched
        print(f"scheduled {ok}/{n} messages ({buckets} buckets × {per}, {a.rate}/s due over {a.seconds} s) "
              f"in {sched_s:.1f} s; T0 in {t0 - time.time():.2f} s")
        if time.time() >= t0:
            print("WARNING: scheduling ran past T0: lateness figures are invalid; use --lead")

        late: list[float] = []
        stop = threading.Event()

        def arrived(now, lines):
            for line in lines:
                late.append(now - due[json.loads(line)["device_token"]])

        def tail():
            tail_lines(rec, stop, arrived)

        la0 = loadavg()
        cpu0 = h.cpu_seconds()
        tc0 = thread_cpu(h.proc.pid)
        rss0 = h.proc_status().get('VmRSS')
        th = threading.Thread(target=tail, daemon=True)
        th.start()
        deadline = time.monotonic() + a.timeout + (t0 - time.time())
        while len(late) < ok and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()
        th.join(5)
        cpu1 = h.cpu_seconds()
        tc1 = thread_cpu(h.proc.pid)
        print(f"server threads CPU: {thread_cpu_delta(tc0, tc1)}; VmRSS before {rss0}")
        la1 = loadavg()
        got = sorted(late)
        print(f"delivered {len(got)}/{ok}; lateness s: min {got[0]:.3f} p50 {pct(got, 50):.3f} p90 {pct(got, 90):.3f} "
              f"p99 {pct(got, 99):.3f} max {got[-1]:.3f}; last delivery {max(0.0, time.time() - t0):.1f} s after T0 "
              f"(due span {a.seconds} s)")
        print(f"server CPU: user {cpu1[0] - cpu0[0]:.2f} s sys {cpu1[1] - cpu0[1]:.2f} s; VmHWM {h.proc_status().get('VmHWM')}; "
              f"counts {h.counts()}; loadavg before {la0} after {la1}")
    finally:
        code = h.stop()
        print(f"server exit {code}")
        if not a.keep:
            rmtree(tmp)


if __name__ == "__main__":
    main()
