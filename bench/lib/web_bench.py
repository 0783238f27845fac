"""Schedule over the ContextPush web API (HTTP/1.1 keep-alive, JSON) vs
Schedule over gRPC (HTTP/2, protobuf), same server, same message, alternating
rounds (issue 28's budget: JSON over HTTP/1.1 >= 0.6x gRPC). With
`--connect`, Schedule as a Connect unary call too (HTTP/2, `application/json`,
the gRPC request printed by protobuf's own json_format; budget >= 0.7x gRPC).

Both sides keep the same number of requests in flight (`-c` connections; gRPC
with one stream each, HTTP/1.1 keep-alive without pipelining), so group
commit sees the same concurrency; gRPC at `-c 16 -m 32` is printed too, for
reference. Each run's requests are checked against the stored count (Status).
Prints rates, p50/p99 latency, server CPU per request and peak RSS."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from herald_bench import (Herald, bench_tmp, framed, h2load, loadavg, pct, rmtree, schedule_request,  # noqa: E402
                          wait_for)

WEB_PATH = "/v1/campaigns/schedule_message_for_user"


def web_body(after_iso: str) -> bytes:
    """The seed document's every-field example, due a day ahead, no key (each request a new message)."""
    return json.dumps({
        "bundle_id": "com.example.app", "platform": "ios", "user_id": "user-000042",
        "target_delivery_time": after_iso, "campaign_id": "daily-digest", "delivery_method": "traditional",
        "content": {"default_locale": "en", "title": {"en": "Your daily digest", "de": "Deine Tageszusammenfassung"},
                    "body": {"en": "3 new stories picked for you", "de": "3 neue Artikel für dich"},
                    "sound": "default", "badge": 3, "userInfo": {"story_id": "s-12345", "source": "bench"},
                    "thread-id": "digest"},
    }).encode()


def h1load(address: str, body_file: str, n: int, c: int, log_file: str) -> dict:
    """`c` keep-alive HTTP/1.1 connections, one request in flight each."""
    return h2load(address, body_file, n, c, 1, path=WEB_PATH, log_file=log_file,
                  headers=("content-type: application/json",), h1=True)


def connect_load(address: str, body_file: str, n: int, c: int, log_file: str) -> dict:
    """`c` HTTP/2 connections, one Connect unary call in flight each (as the gRPC side)."""
    return h2load(address, body_file, n, c, 1, log_file=log_file,
                  headers=("content-type: application/json", "connect-protocol-version: 1"))


def stored(h: Herald, expect: int, timeout=30.0) -> int:
    """Messages stored once Status counts `expect` (its snapshot refreshes about once a second)."""
    return wait_for(lambda: (t := h.total()) >= expect and t, timeout, 0.2) or h.total()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=50_000)
    ap.add_argument("-c", type=int, default=64, help="requests in flight on each side (connections)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--connect", action="store_true", help="also Schedule as Connect JSON over HTTP/2")
    a = ap.parse_args()
    tmp = bench_tmp("herald-bench-web-")
    try:
        after = time.time() + 86_400
        iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(after))
        grpc_body, web_file = os.path.join(tmp, "schedule.bin"), os.path.join(tmp, "schedule.json")
        with open(grpc_body, "wb") as f:
            f.write(framed(schedule_request(user="user-000042", key="", after=after)))
        with open(web_file, "wb") as f:
            f.write(web_body(iso))
        connect_file = os.path.join(tmp, "schedule-connect.json")
        if a.connect:
            from google.protobuf import json_format
            with open(connect_file, "w") as f:
                f.write(json_format.MessageToJson(schedule_request(user="user-000042", key="", after=after), indent=None))
        h = Herald(os.path.join(tmp, "data"))
        try:
            # Checked first: the JSON body is accepted (200) and stored.
            check = h1load(h.address, web_file, 1, 1, os.path.join(tmp, "check.log"))
            assert check.get("2xx") == 1, check["raw"]
            base = stored(h, 1)
            if a.connect:
                check = connect_load(h.address, connect_file, 1, 1, os.path.join(tmp, "check-connect.log"))
                assert check.get("2xx") == 1, check["raw"]
                base = stored(h, base + 1)
            rows = {"grpc": [], "web": [], "grpc-c16-m32": []}
            if a.connect:
                rows["connect"] = []
            for r in range(a.rounds):
                for name in rows:
                    cpu0 = h.cpu_seconds()
                    log = os.path.join(tmp, f"{name}-{r}.log")
                    if name == "web":
                        res = h1load(h.address, web_file, a.n, a.c, log)
                    elif name == "connect":
                        res = connect_load(h.address, connect_file, a.n, a.c, log)
                    elif name == "grpc":
                        res = h2load(h.address, grpc_body, a.n, a.c, 1, log_file=log)
                    else:
                        res = h2load(h.address, grpc_body, a.n, 16, 32, log_file=log)
                    cpu1 = h.cpu_seconds()
                    total = stored(h, base + res.get("succeeded", 0))
                    ok = total - base == res.get("succeeded") == a.n
                    base = total
                    cpu_us = ((cpu1[0] - cpu0[0]) + (cpu1[1] - cpu0[1])) / a.n * 1e6
                    lat = res["lat_ms"]
                    rows[name].append((res.get("req_s", 0.0), cpu_us))
                    print(f"round {r + 1} {name:13s}: {res.get('req_s', 0):>9,.0f} req/s, p50 {pct(lat, 50):.2f} ms, "
                          f"p99 {pct(lat, 99):.2f} ms, server CPU {cpu_us:.0f} µs/request, stored "
                          f"{'OK' if ok else 'MISMATCH'} (succeeded {res.get('succeeded')}); loadavg {loadavg()}",
                          flush=True)
            med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for k, v in rows.items()}
            ratio = med["web"][0] / med["grpc"][0]
            print(f"medians of {a.rounds}: web JSON/HTTP/1.1 {med['web'][0]:,.0f} req/s ({med['web'][1]:.0f} µs CPU) vs "
                  f"gRPC -c {a.c} -m 1 {med['grpc'][0]:,.0f} req/s ({med['grpc'][1]:.0f} µs) = {ratio:.2f} "
                  f"(budget >= 0.6: {'met' if ratio >= 0.6 else 'MISSED'}); gRPC -c 16 -m 32 {med['grpc-c16-m32'][0]:,.0f} "
                  f"req/s ({med['grpc-c16-m32'][1]:.0f} µs); server VmHWM {h.proc_status().get('VmHWM')}")
            if a.connect:
                cratio = med["connect"][0] / med["grpc"][0]
                print(f"medians of {a.rounds}: Connect JSON/HTTP/2 -c {a.c} -m 1 {med['connect'][0]:,.0f} req/s "
                      f"({med['connect'][1]:.0f} µs CPU) vs gRPC {med['grpc'][0]:,.0f} req/s = {cratio:.2f} "
                      f"(budget >= 0.7: {'met' if cratio >= 0.7 else 'MISSED'})")
        finally:
            print(f"server exit {h.stop()}")
    finally:
        rmtree(tmp)


if __name__ == "__main__":
    main()
