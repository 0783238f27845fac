"""Console budgets (issue 29): page time and size on a store of N messages,
and gRPC Health/Schedule rates with the overview polled every second vs not.

Page time is measured by the client (request sent → last byte read, one
keep-alive connection on loopback), so it over-states the server's time a
little. See bench/console.sh."""
from __future__ import annotations

import argparse
import http.client
import os
import socket
import sqlite3
import statistics
import threading
import time

from herald_bench import Herald, bench_tmp, framed, h2load, loadavg, rmtree, schedule_request, stubs
from messages import CAMPAIGN, fill

BUNDLE = "com.example.app"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spread_campaigns(path: str):
    t0 = time.monotonic()
    db = sqlite3.connect(path)
    with db:
        db.execute("UPDATE messages SET campaign_id = printf('c-%03d', (rowid / 2) % 1000) WHERE rowid % 2 = 0")
    db.close()
    print(f"moved half of the messages to 1,000 small campaigns in {time.monotonic() - t0:.1f} s")


def time_page(port: int, path: str, n: int) -> tuple[list[float], int]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    times, size = [], 0
    for i in range(n + 3):
        t0 = time.perf_counter()
        conn.request("GET", path)
        reply = conn.getresponse()
        body = reply.read()
        elapsed = (time.perf_counter() - t0) * 1000
        assert reply.status == 200, (path, reply.status, body[:300])
        size = len(body)
        if i >= 3:  # warm-up
            times.append(elapsed)
    conn.close()
    return sorted(times), size


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--users", type=int, default=10_000)
    ap.add_argument("-n", type=int, default=50, help="fetches per page")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--health-n", type=int, default=200_000)
    ap.add_argument("--schedule-n", type=int, default=20_000)
    a = ap.parse_args()

    stubs()
    tmp = bench_tmp("herald-bench-console-")
    data = os.path.join(tmp, "data")
    try:
        Herald(data).stop()  # creates the current schema
        db = os.path.join(data, "herald.sqlite")
        mid, user = fill(db, a.messages, a.users, schedule_request(user="user-000001").SerializeToString())
        spread_campaigns(db)
        admin = free_port()
        h = Herald(data, "--admin-port", str(admin), "--durability", "full")
        print(f"restart on {a.messages} messages: listening after {h.startup_s:.2f} s; load {loadavg()}")
        try:
            deadline = time.monotonic() + 60
            while h.total() < a.messages and time.monotonic() < deadline:
                time.sleep(0.2)  # the overview's counts come from the background snapshot
            pages = {
                "overview": "/",
                "campaign (~500 messages)": f"/console/campaigns?bundle={BUNDLE}&campaign=c-007",
                f"campaign (~{a.messages // 2:,} messages)": f"/console/campaigns?bundle={BUNDLE}&campaign={CAMPAIGN}",
                "message": f"/console/message?bundle={BUNDLE}&id={mid}",
                "message by key": f"/console/message?bundle={BUNDLE}&key=key-00000042",
                "user's messages": f"/console/messages?bundle={BUNDLE}&user={user}",
                "events": f"/console/events?bundle={BUNDLE}",
            }
            print(f"\n| page | median ms | p99 ms | bytes |\n|---|---|---|---|")
            for name, path in pages.items():
                n = a.n if "500,000" not in name and f"{a.messages // 2:,}" not in name else max(5, a.n // 10)
                times, size = time_page(admin, path, n)
                p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
                print(f"| {name} | {statistics.median(times):.1f} | {p99:.1f} | {size:,} |")

            # An empty HealthCheckRequest (service ""): the 5-byte gRPC frame of no bytes.
            health_body = os.path.join(tmp, "health.bin")
            with open(health_body, "wb") as f:
                f.write(b"\x00\x00\x00\x00\x00")
            sched_body = os.path.join(tmp, "schedule.bin")
            with open(sched_body, "wb") as f:
                f.write(framed(schedule_request(user="user-000042", key="", after=time.time() + 86_400)))

            stop = threading.Event()
            polls = []

            def poller():
                conn = http.client.HTTPConnection("127.0.0.1", admin, timeout=30)
                while not stop.is_set():
                    t0 = time.perf_counter()
                    conn.request("GET", "/")
                    body = conn.getresponse().read()
                    polls.append((time.perf_counter() - t0) * 1000)
                    assert body
                    stop.wait(1.0)
                conn.close()

            rates = {("health", False): [], ("health", True): [], ("schedule", False): [], ("schedule", True): []}
            for rnd in range(a.rounds):
                for polled in (False, True) if rnd % 2 == 0 else (True, False):
                    thread = None
                    if polled:
                        stop.clear()
                        thread = threading.Thread(target=poller, daemon=True)
                        thread.start()
                    hr = h2load(h.address, health_body, a.health_n, c=16, m=32, path="/grpc.health.v1.Health/Check")
                    sr = h2load(h.address, sched_body, a.schedule_n, c=16, m=32)
                    if thread:
                        stop.set()
                        thread.join(timeout=30)
                    assert hr.get("succeeded") == a.health_n and sr.get("succeeded") == a.schedule_n, (hr["raw"][-500:], sr["raw"][-500:])
                    rates[("health", polled)].append(hr["req_s"])
                    rates[("schedule", polled)].append(sr["req_s"])
                    print(f"round {rnd + 1} {'polled' if polled else 'quiet '}: health {hr['req_s']:,.0f} req/s, "
                          f"schedule {sr['req_s']:,.0f} req/s; load {loadavg()}", flush=True)
            print(f"\n(medians of {a.rounds} rounds each)\n| RPC | without console req/s | overview polled 1/s req/s | ratio |\n|---|---|---|---|")
            for rpc in ("health", "schedule"):
                off = statistics.median(rates[(rpc, False)])
                on = statistics.median(rates[(rpc, True)])
                print(f"| {rpc} (-c16 -m32) | {off:,.0f} | {on:,.0f} | {on / off:.3f}x |")
            print(f"\noverview polls during the A/B: {len(polls)}, median {statistics.median(polls):.1f} ms; load {loadavg()}")
        finally:
            h.stop()
    finally:
        rmtree(tmp)


if __name__ == "__main__":
    main()
