"""Issue 27's StreamEvents budgets (bench/events.sh):

1. dispatch — the same binary dispatching N messages (bench/lib/dispatch.py's
   measure(): K users, all due at T0, grace 0, the bundled APNs simulator)
   without event consumers, then with C (10) consumers streaming everything
   (StreamEvents from the start, no filter, opened before the Schedules,
   each its own connection: by default one h2load process, `-c C -n C -m 1`,
   reading in C, its streams ended by a gRPC deadline past the dispatch;
   `--consumer grpcio`: C Python grpcio processes, raw bytes, which cost far
   more CPU than the server spends on them and so crowd it on 2 cores);
   rounds alternate; medians of the rate (first progress → all SENT) and of
   the server CPU per message, and the ratio (budget ≥ 0.9×). Each consumer
   must end with every event of the run (3 per message: SCHEDULED, the
   device's SENT, the message's SENT): h2load's DATA bytes = C × the log's
   bytes (read once more at the end), or each grpcio process's count.
2. latency — event delivery latency, commit → consumer receipt: Schedules at
   a steady RATE for SECONDS (due in an hour: nothing dispatches), one
   consumer; per SCHEDULED event, receipt − the Schedule call's return (the
   commit is durable before the reply) and receipt − the event's `at`
   (when the store wrote it, ms). On SQLite, then (with
   HERALD_TEST_POSTGRES_URL) across two PostgreSQL replicas: the consumer
   on replica A, the Schedules to replica B. Budget p99 ≤ 1 s.

Peak RSS (VmHWM) of every server is printed. Every loop is bounded in count
and time (--timeout).

Usage: bench/events.sh [--part dispatch|latency|all] [-n 50000] [--users 200] [--consumers 10] [--consumer h2load|grpcio] [--rounds 3]
                       [--rate 200] [--seconds 20]"""
from __future__ import annotations

import argparse
import datetime as dt
import importlib
import multiprocessing
import os
import re
import statistics
import subprocess
import threading
import time

import dispatch
import herald_bench
from herald_bench import BUNDLE, Herald, bench_tmp, loadavg, pct, rmtree, schedule_request, stubs

PATH = "/herald.v1.PushService/StreamEvents"
EVENTS_PER_MESSAGE = 3  # SCHEDULED, the device's SENT, the message's SENT


def read_pb2():
    stubs()
    return importlib.import_module("herald.v1.read_side_pb2")


def consume(address: str, request: bytes, count, timeout: float):
    """A consumer process: streams everything, counting events (raw bytes,
    no parsing), until its deadline or until the parent terminates it."""
    import grpc
    channel = grpc.insecure_channel(address)
    call = channel.unary_stream(PATH)(request, timeout=timeout)
    try:
        for _ in call:
            count.value += 1
    except grpc.RpcError:
        pass
    finally:
        channel.close()


class Consumers:
    """C consumer processes on one server (started by this script; stopped
    by their own PIDs)."""

    def __init__(self, address: str, c: int, timeout: float):
        # From the start: everything, whenever the process gets its stream open.
        request = read_pb2().StreamEventsRequest(bundle_id=BUNDLE, from_start=True).SerializeToString()
        ctx = multiprocessing.get_context("spawn")
        self.counts = [ctx.Value("q", 0, lock=False) for _ in range(c)]
        self.procs = [ctx.Process(target=consume, args=(address, request, n, timeout), daemon=True) for n in self.counts]
        for p in self.procs:
            p.start()

    def cpu_seconds(self) -> float:
        total = 0.0
        for p in self.procs:
            try:
                with open(f"/proc/{p.pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            except OSError:
                pass
        return total

    def wait_all(self, expected: int, timeout: float) -> float | None:
        """Seconds until every consumer counted `expected` events (None: not
        within `timeout`); polls the counters."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if all(n.value >= expected for n in self.counts):
                return time.monotonic() - t0
            time.sleep(0.02)
        return None

    def stop(self):
        for p in self.procs:
            if p.is_alive():
                p.terminate()
        for p in self.procs:
            p.join(timeout=30)


class H2loadConsumers:
    """C consumers as one h2load process (`-c C -n C -m 1`: C connections,
    one StreamEvents stream each, read in C and discarded, so the consumers'
    own CPU stays small beside the server's). The streams end at their
    gRPC deadline (`grpc-timeout`, `deadline` s), when h2load reports the
    DATA bytes each received."""

    def __init__(self, address: str, c: int, deadline: float, body_file: str):
        request = read_pb2().StreamEventsRequest(bundle_id=BUNDLE, from_start=True)
        with open(body_file, "wb") as f:
            f.write(herald_bench.framed(request))
        self.c = c
        self.proc = subprocess.Popen(
            ["h2load", "-n", str(c), "-c", str(c), "-m", "1", "-t", "1", "-d", body_file,
             "-H", "content-type: application/grpc", "-H", "te: trailers", "-H", f"grpc-timeout: {int(deadline)}S",
             f"http://{address}{PATH}"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def finish(self, timeout: float) -> tuple[int | None, float]:
        """Waits (bounded) for h2load's end: (DATA bytes received by all
        streams, h2load's CPU seconds); (None, cpu) if it did not end."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            if pid:
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                out = self.proc.stdout.read()
                match = re.search(r"\((\d+)\) data", out)
                done = re.search(r"requests: .*", out)
                print(f"h2load consumers: {done.group(0) if done else out[-300:]}")
                return (int(match.group(1)) if match else None), usage.ru_utime + usage.ru_stime
            time.sleep(0.1)
        self.proc.kill()
        self.proc.wait()
        return None, float("nan")


def log_bytes(address: str, count: int, timeout: float) -> int:
    """DATA bytes of the first `count` events of a stream from the start (a
    gRPC frame each: 5 + the message)."""
    import grpc
    request = read_pb2().StreamEventsRequest(bundle_id=BUNDLE, from_start=True).SerializeToString()
    channel = grpc.insecure_channel(address)
    call = channel.unary_stream(PATH)(request, timeout=timeout)
    total = n = 0
    try:
        for message in call:
            total += 5 + len(message)
            n += 1
            if n == count:
                break
    finally:
        call.cancel()
        channel.close()
    return total if n == count else -1


# MARK: 1. dispatch with and without consumers

class HeraldWithConsumers(Herald):
    """dispatch.measure()'s server with `consumers` consumers attached from
    its start; at stop, checks (bounded) that each got every event."""
    consumers = 0
    kind = "h2load"
    deadline = 120.0  # h2load consumers: their streams' gRPC deadline
    timeout = 300.0
    results: list[dict] = []

    def __init__(self, data_dir, *args):
        super().__init__(data_dir, *args)
        self.attached = None
        if self.consumers and self.kind == "h2load":
            body = os.path.join(os.path.dirname(data_dir), "stream-events-request.bin")
            self.attached = H2loadConsumers(self.address, self.consumers, self.deadline, body)
        elif self.consumers:
            self.attached = Consumers(self.address, self.consumers, self.timeout + 600)

    def stop(self, timeout=60) -> int:
        if isinstance(self.attached, H2loadConsumers):
            sent = self.counts().get("SENT", 0)
            expected = EVENTS_PER_MESSAGE * sent
            data, cpu = self.attached.finish(self.deadline + 60)
            want = log_bytes(self.address, expected, self.timeout)
            complete = data is not None and want > 0 and data == self.attached.c * want
            print(f"consumers: {self.attached.c} h2load streams until their deadline ({self.deadline:.0f} s): "
                  f"{data} DATA bytes, {self.attached.c} × the log's {expected} events ({want} bytes) = "
                  f"{self.attached.c * want}: {'every consumer got every event' if complete else 'INCOMPLETE'}; "
                  f"h2load CPU {cpu:.1f} s")
            HeraldWithConsumers.results.append({"complete": complete, "lag": None})
        elif self.attached:
            try:
                sent = self.counts().get("SENT", 0)
                expected = EVENTS_PER_MESSAGE * sent
                lag = self.attached.wait_all(expected, self.timeout)
                got = [n.value for n in self.attached.counts]
                print(f"consumers: {len(got)} × {expected} events expected; got min {min(got)} max {max(got)}; "
                      f"the slowest caught up {'NOT within the timeout' if lag is None else f'{lag:.2f} s'} after the "
                      f"last SENT was counted; consumers' CPU {self.attached.cpu_seconds():.1f} s")
                HeraldWithConsumers.results.append({"complete": lag is not None and min(got) == expected, "lag": lag})
            finally:
                self.attached.stop()
        return super().stop(timeout)


def dispatch_part(a):
    dispatch.Herald = HeraldWithConsumers  # measure() builds its server through this name
    # Scheduling with C consumers reading the SCHEDULED events live is slower: T0 leaves n/1500 + 10 s.
    base = dict(lead=a.n / 1500 + 10, n=a.n, users=a.users, record=False, timeout=a.timeout, keep=False,
                log_level="warning", perf="", mixed=False, vs_apns=False, apns_connections=1,
                apns_concurrency=1000, rounds=1, server_arg=[])
    rates = {"without": [], "with": []}
    cpus = {"without": [], "with": []}
    for round_ in range(a.rounds):
        for side in ("without", "with"):
            HeraldWithConsumers.consumers = a.consumers if side == "with" else 0
            HeraldWithConsumers.kind = a.consumer
            HeraldWithConsumers.timeout = a.timeout
            # The streams outlive T0 (the lead) and the dispatch (n/2,500 s) with 20 s to spare.
            HeraldWithConsumers.deadline = base["lead"] + a.n / 2_500 + 20
            print(f"== round {round_ + 1}/{a.rounds}, {side} {a.consumers} event consumers (loadavg {loadavg()})",
                  flush=True)
            rates[side].append(dispatch.measure(argparse.Namespace(**base), android=0))
            cpus[side].append(dispatch.LAST_CPU_US[0])
    r_without, r_with = statistics.median(rates["without"]), statistics.median(rates["with"])
    c_without, c_with = statistics.median(cpus["without"]), statistics.median(cpus["with"])
    per_round = [w / o for o, w in zip(rates["without"], rates["with"])]
    complete = all(r["complete"] for r in HeraldWithConsumers.results)
    met = r_with / r_without >= 0.9 and complete
    print(f"per round, with/without: rate {' '.join(f'{x:.2f}' for x in per_round)}; CPU per message "
          f"{' '.join(f'{w / o:.2f}' for o, w in zip(cpus['without'], cpus['with']))}")
    print(f"dispatch with {a.consumers} event consumers: medians of {a.rounds}: without {r_without:,.0f} msg/s "
          f"({c_without:.0f} µs server CPU/msg), with {r_with:,.0f} msg/s ({c_with:.0f} µs): rate "
          f"{r_with / r_without:.2f}x, CPU {c_with / c_without:.2f}x; every consumer got every event: "
          f"{'yes' if complete else 'NO'} (budget rate >= 0.90x: {'met' if met else 'MISSED'}); loadavg {loadavg()}")


# MARK: 2. latency

class LatencyConsumer(threading.Thread):
    """Records the arrival time and `at` (ms) of each SCHEDULED event by key."""

    def __init__(self, server: Herald, timeout: float):
        super().__init__(daemon=True)
        r = read_pb2()
        self.scheduled = r.EVENT_KIND_SCHEDULED
        self.arrivals: dict[str, tuple[float, float]] = {}
        self.call = server.push().StreamEvents(r.StreamEventsRequest(bundle_id=BUNDLE), timeout=timeout)

    def run(self):
        import grpc
        try:
            for event in self.call:
                if event.kind == self.scheduled:
                    arrival = time.time()
                    at = dt.datetime.fromisoformat(event.at.replace("Z", "+00:00")).timestamp()
                    self.arrivals[event.idempotency_key] = (arrival, at)
        except grpc.RpcError:
            pass


def latency_run(label: str, reader: Herald, writer: Herald, a) -> dict:
    consumer = LatencyConsumer(reader, a.timeout + a.seconds + 60)
    consumer.start()
    push = writer.push()
    n = int(a.rate * a.seconds)
    returned: dict[str, float] = {}
    start = time.monotonic() + 1.0  # the consumer's stream is open by then (it starts from now)
    deadline = start + a.seconds + a.timeout
    after = time.time() + 3600  # due in an hour: nothing dispatches
    late = 0
    began = time.monotonic()
    for i in range(n):
        if time.monotonic() > deadline:
            break
        pause = start + i / a.rate - time.monotonic()
        if pause > 0:
            time.sleep(pause)  # the steady rate
        else:
            late += 1
        key = f"lat-{label}-{i:06d}"
        push.Schedule(schedule_request(user=f"lat-user-{i % 50:02d}", key=key, after=after), timeout=30)
        returned[key] = time.time()
    pace = len(returned) / max(1e-9, time.monotonic() - began)
    end = time.monotonic() + a.timeout
    while len(consumer.arrivals) < len(returned) and time.monotonic() < end:
        time.sleep(0.05)  # polling the consumer's count, bounded
    consumer.call.cancel()
    consumer.join(timeout=30)
    from_return = sorted(consumer.arrivals[k][0] - t for k, t in returned.items() if k in consumer.arrivals)
    from_at = sorted(arrival - at for arrival, at in consumer.arrivals.values())
    missing = len(returned) - len(from_return)
    out = {"n": len(returned), "missing": missing, "p50": pct(from_return, 50), "p99": pct(from_return, 99),
           "max": from_return[-1] if from_return else float("nan"), "at_p50": pct(from_at, 50),
           "at_p99": pct(from_at, 99)}
    print(f"{label}: {len(returned)} Schedules, one at a time, at {a.rate:g}/s asked, {pace:.0f}/s done ({late} behind "
          f"the pace), {missing} events missing; "
          f"latency Schedule return → receipt p50 {out['p50'] * 1000:.0f} ms p99 {out['p99'] * 1000:.0f} ms max "
          f"{out['max'] * 1000:.0f} ms; event `at` → receipt p50 {out['at_p50'] * 1000:.0f} ms p99 "
          f"{out['at_p99'] * 1000:.0f} ms (budget p99 <= 1 s: "
          f"{'met' if out['p99'] <= 1.0 and out['at_p99'] <= 1.0 and not missing else 'MISSED'})", flush=True)
    return out


def latency_part(a):
    tmp = bench_tmp("herald-bench-events-")
    try:
        print(f"== latency, SQLite (loadavg {loadavg()})", flush=True)
        h = Herald(os.path.join(tmp, "sqlite"), "--log-level", "warning")
        try:
            latency_run("sqlite", h, h, a)
            print(f"SQLite server peak RSS (VmHWM) {h.proc_status().get('VmHWM')}")
        finally:
            h.stop()
        import replicas
        if not replicas.URL:
            print("latency across PostgreSQL replicas: skipped (set HERALD_TEST_POSTGRES_URL: "
                  "eval \"$(scripts/pg-test-cluster.sh start)\")")
            return
        print(f"== latency, two PostgreSQL replicas: consumer on A, Schedules to B (loadavg {loadavg()})", flush=True)
        db = replicas.Database("herald_bench_events")
        servers = []
        try:
            for name in ("a", "b"):
                servers.append(Herald(os.path.join(tmp, f"pg-{name}"), "--log-level", "warning", "--store", db.url,
                                      "--replica-id", name))
            latency_run("postgres A<-B", servers[0], servers[1], a)
            print("PostgreSQL replicas peak RSS (VmHWM): "
                  + ", ".join(f"{n} {s.proc_status().get('VmHWM')}" for n, s in zip("ab", servers)))
        finally:
            for s in servers:
                s.stop()
            db.drop()
    finally:
        rmtree(tmp)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=("dispatch", "latency", "all"), default="all")
    ap.add_argument("-n", type=int, default=50_000, help="dispatch: messages per run")
    ap.add_argument("--users", type=int, default=200, help="dispatch: users, one device each")
    ap.add_argument("--consumers", type=int, default=10)
    ap.add_argument("--consumer", choices=("h2load", "grpcio"), default="h2load",
                    help="dispatch: the consumers as one h2load process (default) or as grpcio processes")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rate", type=float, default=200, help="latency: Schedules per second")
    ap.add_argument("--seconds", type=float, default=20, help="latency: seconds of Schedules")
    ap.add_argument("--timeout", type=float, default=300)
    a = ap.parse_args()
    print(f"binary {herald_bench.BIN}; loadavg {loadavg()}", flush=True)
    if a.part in ("dispatch", "all"):
        dispatch_part(a)
    if a.part in ("latency", "all"):
        latency_part(a)


if __name__ == "__main__":
    main()
