"""Schedule, durable: h2load -c C -m M against Schedule with a realistic body
(empty idempotency key: a fresh server-generated key per request; due a day
ahead so nothing dispatches). Verifies the body with grpcio first and the
stored message count against h2load's succeeded count afterwards."""
from __future__ import annotations

import argparse
import os
import time

from herald_bench import (thread_cpu, thread_cpu_delta, Herald, Perf, bench_tmp, framed, h2load, loadavg, pct, rmtree, schedule_request, wait_for)


def settled_total(h: Herald, expect: int, timeout=30.0) -> int:
    # Status counts come from a snapshot refreshed about once a second.
    got = wait_for(lambda: (t := h.total()) == expect and t, timeout, 0.25)
    return got if got else h.total()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=200_000)
    ap.add_argument("-c", type=int, default=16)
    ap.add_argument("-m", type=int, default=32)
    ap.add_argument("--warmup", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--perf", default="", help="perf record the server during the measured runs into this file")
    ap.add_argument("--durability", choices=["full", "process"], default="full",
                    help="herald serve --durability (full: fsync per group commit; process: survives kill -9)")
    a = ap.parse_args()

    tmp = bench_tmp("herald-bench-schedule-")
    data = os.path.join(tmp, "data")
    body = os.path.join(tmp, "schedule.bin")
    req = schedule_request(user="user-000042", key="", after=time.time() + 86_400)
    with open(body, "wb") as f:
        f.write(framed(req))
    print(f"body: {os.path.getsize(body)} bytes framed ScheduleRequest")
    print(f"durability: {a.durability}")
    h = Herald(data, "--durability", a.durability)
    try:
        reply = h.push().Schedule(req, timeout=10)  # grpcio: raises unless grpc-status 0
        print(f"grpcio check: OK state={reply.state} key={reply.idempotency_key} send_at={reply.send_at}")
        base = settled_total(h, 1)
        assert base == 1, f"expected 1 stored message, Status says {base}"
        if a.warmup:
            w = h2load(h.address, body, a.warmup, a.c, a.m)
            base += w.get("succeeded", 0)
            print(f"warm-up: {w.get('succeeded')} succeeded")
        for run in range(a.runs):
            la0 = loadavg()
            cpu0 = h.cpu_seconds()
            tc0 = thread_cpu(h.proc.pid)
            io0 = h.io()
            rss0 = h.proc_status().get('VmRSS')
            with Perf(h.proc.pid, a.perf or None):
                r = h2load(h.address, body, a.n, a.c, a.m, log_file=os.path.join(tmp, f"h2load-{run}.log"))
            cpu1 = h.cpu_seconds()
            tc1 = thread_cpu(h.proc.pid)
            io1 = h.io()
            print(f"server I/O per request: write() {(io1['wchar'] - io0['wchar']) / a.n / 1024:.1f} KiB, "
                  f"to disk {(io1['write_bytes'] - io0['write_bytes']) / a.n / 1024:.1f} KiB")
            print(f"server threads CPU: {thread_cpu_delta(tc0, tc1)}; VmRSS before {rss0}")
            la1 = loadavg()
            lat = r["lat_ms"]
            total = settled_total(h, base + r["succeeded"])
            grew = total - base
            base = total
            print(f"run {run + 1}: n={a.n} -c {a.c} -m {a.m}: {r['req_s']:,.0f} req/s in {r['elapsed']:.2f} s; "
                  f"succeeded {r['succeeded']} failed {r['failed']} errored {r['errored']} 2xx {r.get('2xx')}; "
                  f"latency ms p50 {pct(lat, 50):.2f} p90 {pct(lat, 90):.2f} p99 {pct(lat, 99):.2f} "
                  f"max {lat[-1] if lat else float('nan'):.2f}; "
                  f"stored +{grew} ({'OK' if grew == r['succeeded'] else 'MISMATCH'}); "
                  f"server CPU user {cpu1[0] - cpu0[0]:.2f} s sys {cpu1[1] - cpu0[1]:.2f} s; "
                  f"loadavg before {la0} after {la1}")
        st = h.proc_status()
        print(f"server VmHWM {st.get('VmHWM')}; db {sum(os.path.getsize(os.path.join(data, f)) for f in os.listdir(data)) / 2**20:.1f} MiB")
    finally:
        code = h.stop()
        print(f"server exit {code}")
        if not a.keep:
            rmtree(tmp)


if __name__ == "__main__":
    main()
