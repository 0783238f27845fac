"""Store size under a steady schedule-and-deliver load with a short retention.

K users with one device each; Schedule requests at a fixed rate (traditional,
grace 0: each is delivered to the bundled APNs simulator at once and ends
SENT, with one outcome row); every --every seconds it prints the store's size
(herald.sqlite + -wal), the messages Status counts, and the Schedule latency
of that interval (p50/p99/max). With --retention-seconds R the server deletes
finished messages R seconds after their last change, so the size should stop
growing after about R seconds (plus one pass interval) and stay flat;
--retention-seconds 0 runs with the default (30 days) for comparison."""
from __future__ import annotations

import argparse
import os
import threading
import time

from herald_bench import Herald, bench_tmp, loadavg, pct, register_users, rmtree, schedule_request, stubs


def size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except FileNotFoundError:
        return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=int, default=300, help="Schedule requests per second")
    ap.add_argument("--duration", type=float, default=180, help="seconds of load")
    ap.add_argument("--retention-seconds", type=int, default=20, help="0: the default retention (30 days)")
    ap.add_argument("--every", type=float, default=10, help="seconds between samples")
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()

    tmp = bench_tmp("herald-bench-retention-")
    data = os.path.join(tmp, "data")
    args = ["--grace-seconds", "0", "--log-level", "warning"]
    if a.retention_seconds > 0:
        args += ["--retention-seconds", str(a.retention_seconds)]
    h = Herald(data, *args)
    db, wal = os.path.join(data, "herald.sqlite"), os.path.join(data, "herald.sqlite-wal")
    try:
        users = [f"retention-user-{i:04d}" for i in range(a.users)]
        register_users(h, users)
        stub = h.push()
        requests = [schedule_request(user=u) for u in users]
        lock = threading.Lock()
        latencies: list[float] = []
        failures = [0]

        def done(started):
            def callback(future):
                elapsed = time.monotonic() - started
                with lock:
                    if future.exception() is None:
                        latencies.append(elapsed)
                    else:
                        failures[0] += 1
            return callback

        print(f"rate {a.rate}/s for {a.duration:.0f} s, retention "
              f"{str(a.retention_seconds) + ' s' if a.retention_seconds else 'default (30 days)'}, load {loadavg()}")
        print(f"{'t s':>5} {'sent':>8} {'stored':>8} {'db MiB':>7} {'wal MiB':>8} {'total MiB':>9} "
              f"{'p50 ms':>7} {'p99 ms':>7} {'max ms':>7}")
        start = time.monotonic()
        sent = 0
        next_sample = start + a.every
        samples = []
        tick = 0.05
        while True:
            now = time.monotonic()
            if now - start >= a.duration:
                break
            due = int((now - start) * a.rate)
            while sent < due:
                f = stub.Schedule.future(requests[sent % len(requests)], timeout=30)
                f.add_done_callback(done(time.monotonic()))
                sent += 1
            if now >= next_sample:
                with lock:
                    window, latencies[:] = sorted(latencies), []
                stored = sum(h.counts().values())
                total = size(db) + size(wal)
                row = (now - start, sent, stored, size(db) / 2**20, size(wal) / 2**20, total / 2**20,
                       pct(window, 50) * 1000 if window else 0, pct(window, 99) * 1000 if window else 0,
                       window[-1] * 1000 if window else 0)
                samples.append(row)
                print(f"{row[0]:5.0f} {row[1]:8d} {row[2]:8d} {row[3]:7.1f} {row[4]:8.1f} {row[5]:9.1f} "
                      f"{row[6]:7.1f} {row[7]:7.1f} {row[8]:7.1f}", flush=True)
                next_sample += a.every
            time.sleep(tick)
        print(f"failed Schedule calls: {failures[0]}; load {loadavg()}")
        if a.retention_seconds and len(samples) >= 4:
            settled = [s for s in samples if s[0] >= 2 * a.retention_seconds + 10]
            if settled:
                low, high = min(s[5] for s in settled), max(s[5] for s in settled)
                print(f"after {2 * a.retention_seconds + 10} s: store {low:.1f}–{high:.1f} MiB "
                      f"(file + WAL) while {samples[-1][1] - settled[0][1]} more messages were scheduled; "
                      f"stored messages {min(s[2] for s in settled)}–{max(s[2] for s in settled)}")
    finally:
        code = h.stop()
        print(f"herald exited {code}")
        if not a.keep:
            rmtree(tmp)


if __name__ == "__main__":
    stubs()
    main()
