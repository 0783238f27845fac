"""Issue 24 item 4 as an attack on the real binary: R clients keep
CampaignReport (and ListMessages) calls in flight against a seeded campaign
while another client schedules; prints Schedule and Health p50/p99, the
read outcomes by code and the server's peak RSS.

    HERALD_BIN=.build/debug/herald .venv/bin/python bench/read_flood.py \
        [--store postgres://…] [--seed 5000] [--readers 300] [--seconds 10]

Run it with the binary before and after the change, on the same machine.
Bounded: the flood stops after --seconds; every call has a deadline."""
from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "Tests" / "interop"))
from conftest import start_herald  # noqa: E402
from test_wire import EMPTY_FRAME, HEALTH_CHECK  # noqa: E402

sys.path.insert(0, str(ROOT / "bench" / "lib"))
import herald_bench as hb  # noqa: E402
from test_messages import APP_TOKEN, AUTH, BUNDLE, Api  # noqa: E402


def load_stubs():
    """The interop suite's generated modules (its `stubs` fixture, called
    as the plain function it wraps)."""
    import conftest
    fixture = conftest.stubs
    function = getattr(fixture, "__wrapped__", None) or getattr(fixture, "_get_wrapped_function")()
    return function()


def rss_kib(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", default="")
    parser.add_argument("--seed", type=int, default=5000)
    parser.add_argument("--readers", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=10)
    args = parser.parse_args()

    s = load_stubs()

    data = tempfile.mkdtemp(prefix="herald-flood-")
    tokens = pathlib.Path(data) / "tokens"
    tokens.write_text(f"app {APP_TOKEN} {BUNDLE}\n")
    os.chmod(tokens, 0o600)
    extra = ["--store", args.store] if args.store else []
    server = start_herald("--grace-seconds", "3600", "--tokens-file", str(tokens), *extra, data_dir=data + "/data")
    pid = server.proc.pid
    api = Api(s, server.address, AUTH)
    with ThreadPoolExecutor(32) as pool:
        list(pool.map(lambda i: api.schedule(f"u{i % 100}", f"seed-{i}-{time.time_ns()}", campaign="big"),
                      range(args.seed)))
    stop = threading.Event()
    codes: dict[str, int] = {}
    lock = threading.Lock()

    def reader(i: int) -> None:
        channel = grpc.insecure_channel(server.address)
        push = s.push_pb2_grpc.PushServiceStub(channel)
        while not stop.is_set():
            try:
                if i % 3 == 0:
                    push.ListMessages(s.read_pb2.ListMessagesRequest(bundle_id=BUNDLE, user_id=f"u{i % 100}"),
                                      metadata=AUTH, timeout=30)
                else:
                    push.CampaignReport(s.read_pb2.CampaignReportRequest(bundle_id=BUNDLE, campaign_id="big"),
                                        metadata=AUTH, timeout=30)
                code = "OK"
            except grpc.RpcError as error:
                code = error.code().name
            with lock:
                codes[code] = codes.get(code, 0) + 1
        channel.close()

    threads = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(args.readers)]
    for t in threads:
        t.start()
    writer = Api(s, server.address, AUTH)
    health = s.HealthStub(grpc.insecure_channel(server.address))
    schedule_ms, health_ms, peak_rss, failures = [], [], 0, 0
    end = time.monotonic() + args.seconds
    # Health measured by h2load in its own process as well: the in-process
    # timing below shares the GIL with the reader threads and mostly
    # measures this client.
    scratch = tempfile.mkdtemp(prefix="herald-read-flood-")
    health_body = os.path.join(scratch, "health.bin")
    with open(health_body, "wb") as f:
        f.write(EMPTY_FRAME)
    h2load_ms: list[float] = []

    def h2load_health() -> None:
        round_ = 0
        while time.monotonic() < end - 0.5 and round_ < 1000:
            log = os.path.join(scratch, f"health-{round_}.log")
            result = hb.h2load(server.address, health_body, 200, c=1, m=1, path=HEALTH_CHECK, log_file=log, timeout=60)
            h2load_ms.extend(result.get("lat_ms", []))
            round_ += 1

    h2load_thread = threading.Thread(target=h2load_health, daemon=True)
    h2load_thread.start()
    i = 0
    while time.monotonic() < end:
        start = time.monotonic()
        try:
            writer.schedule("writer", f"w-{i}-{time.time_ns()}", campaign="w")
        except grpc.RpcError:
            failures += 1
        schedule_ms.append((time.monotonic() - start) * 1000)
        start = time.monotonic()
        health.Check(s.health_pb2.HealthCheckRequest(), timeout=30)
        health_ms.append((time.monotonic() - start) * 1000)
        peak_rss = max(peak_rss, rss_kib(pid))
        i += 1
    stop.set()
    for t in threads:
        t.join(timeout=60)
    h2load_thread.join(timeout=120)

    def pct(values, q):
        return statistics.quantiles(values, n=100)[q - 1] if len(values) >= 2 else (values[0] if values else 0)
    print(f"schedules={len(schedule_ms)} failed={failures} schedule p50={pct(schedule_ms, 50):.1f} ms "
          f"p99={pct(schedule_ms, 99):.1f} ms max={max(schedule_ms):.1f} ms")
    print(f"health (this client, GIL-bound) p50={pct(health_ms, 50):.1f} ms p99={pct(health_ms, 99):.1f} ms")
    print(f"health (h2load -c1 -m1, n={len(h2load_ms)}) p50={pct(h2load_ms, 50):.2f} ms p99={pct(h2load_ms, 99):.2f} ms")
    print(f"reads by code: {dict(sorted(codes.items()))}")
    print(f"peak RSS {peak_rss / 1024:.0f} MiB")
    writer.channel.close()
    api.channel.close()
    server.stop()
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
