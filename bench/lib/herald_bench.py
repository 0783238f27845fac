"""Shared helpers for the scheduling/delivery benchmarks (bench/schedule.sh,
bench/pending.sh, bench/dispatch.sh, bench/lateness.sh).

- stubs(): Python modules generated from Protos/ by grpcio-tools
- Herald: a `herald serve` process on a free loopback port (exec → `listening on`
  timed), stopped by SIGTERM on its own PID only
- schedule_request()/framed(): a realistic ScheduleRequest, 5-byte gRPC framed
- h2load(): runs h2load with a bounded -n and returns its summary and the
  per-request latencies from --log-file
- counts(): Status message counts by state
"""
from __future__ import annotations

import datetime as dt
import importlib
import os
import pathlib
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROTOS = ROOT / "Protos"
BIN = os.environ.get("HERALD_BIN", str(ROOT / ".build" / "release" / "herald"))
BUNDLE = "com.example.app"
LISTENING = re.compile(r"listening on (\S+):(\d+)")

_stubs = None


def stubs():
    global _stubs
    if _stubs is not None:
        return _stubs
    from grpc_tools import protoc

    import atexit
    out = tempfile.mkdtemp(prefix="herald-bench-stubs-")
    atexit.register(shutil.rmtree, out, True)
    protos = sorted(str(p.relative_to(PROTOS)) for p in PROTOS.rglob("*.proto")
                    if not str(p).startswith(str(PROTOS / "google")) and "grpc/health" not in str(p))
    include = pathlib.Path(protoc.__file__).parent / "_proto"
    rc = protoc.main(["protoc", f"-I{PROTOS}", f"-I{include}", f"--python_out={out}",
                      f"--grpc_python_out={out}", *protos])
    assert rc == 0, "grpc_tools.protoc failed"
    sys.path.insert(0, out)

    class S:
        pass

    s = S()
    s.t = importlib.import_module("herald.v1.types_pb2")
    s.p = importlib.import_module("herald.v1.push_service_pb2")
    s.pg = importlib.import_module("herald.v1.push_service_pb2_grpc")
    s.d = importlib.import_module("herald.v1.device_service_pb2")
    s.dg = importlib.import_module("herald.v1.device_service_pb2_grpc")
    _stubs = s
    return s


def crash_cycle_stubs():
    """`stubs()` under the names Tests/interop/crash_cycles.py expects."""
    s = stubs()

    class Stubs:
        types_pb2, push_pb2, push_pb2_grpc, device_pb2, device_pb2_grpc = s.t, s.p, s.pg, s.d, s.dg

    return Stubs


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def rfc3339(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).isoformat(timespec="milliseconds")


def schedule_request(user="user-0001", key="", after: float | None = None, within_hours=4,
                     method="DELIVERY_METHOD_TRADITIONAL", platform="PLATFORM_IOS", bundle=BUNDLE):
    """A realistic iOS ScheduleRequest: two locales, sound, badge, user_info,
    thread id, category, HIGH priority, 1 h TTL. `after` is an absolute epoch
    time for deliver_after (None: now)."""
    s = stubs()
    t, p = s.t, s.p
    req = p.ScheduleRequest(
        bundle_id=bundle, platform=getattr(t, platform), user_id=user, campaign_id="daily-digest",
        idempotency_key=key, delivery_method=getattr(t, method),
        deliver_within_hours=within_hours,
        content=t.Content(
            title=t.LocalizedText(translations={"en": "Your daily digest", "de": "Deine Tageszusammenfassung"}),
            body=t.LocalizedText(translations={"en": "3 new stories picked for you", "de": "3 neue Artikel für dich"}),
            default_locale="en", sound="default", badge=3, thread_id="digest", category="DIGEST"),
        priority=t.PRIORITY_HIGH, ttl_seconds=3600, collapse_id="digest")
    req.content.user_info.update({"story_id": "s-12345", "source": "bench"})
    if after is not None:
        req.deliver_after = rfc3339(after)
    return req


def framed(message) -> bytes:
    data = message.SerializeToString()
    return struct.pack(">BI", 0, len(data)) + data


class Herald:
    """`herald serve` on 127.0.0.1:0. `startup_s` is exec → `listening on`."""

    def __init__(self, data_dir: str, *args: str):
        self.data_dir = data_dir
        self.stderr_lines: list[str] = []
        cmd = [BIN, "serve", "--port", "0", "--data-dir", data_dir, *args]
        t0 = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        threading.Thread(target=self._drain_err, daemon=True).start()
        line = self.proc.stdout.readline()
        self.startup_s = time.monotonic() - t0
        m = LISTENING.search(line or "")
        if not m:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError(f"herald did not report its port: {line!r} {''.join(self.stderr_lines[-20:])}")
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()
        self.port = int(m.group(2))
        self.address = f"127.0.0.1:{self.port}"
        self._channel = None

    def _drain_err(self):
        for line in self.proc.stderr:
            if len(self.stderr_lines) < 2000:
                self.stderr_lines.append(line)

    @property
    def channel(self):
        import grpc
        if self._channel is None:
            self._channel = grpc.insecure_channel(self.address)
        return self._channel

    def push(self):
        return stubs().pg.PushServiceStub(self.channel)

    def devices(self):
        return stubs().dg.DeviceServiceStub(self.channel)

    def status(self):
        return self.push().Status(stubs().p.StatusRequest(), timeout=30)

    def counts(self) -> dict[str, int]:
        st = self.status()
        names = stubs().t.MessageState
        return {names.Name(c.state).removeprefix("MESSAGE_STATE_"): c.count for c in st.messages}

    def total(self) -> int:
        return sum(self.counts().values())

    def proc_status(self) -> dict[str, str]:
        out = {}
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                out[k] = v.strip()
        return out

    def cpu_seconds(self) -> tuple[float, float]:
        return process_cpu(self.proc.pid)

    def io(self) -> dict[str, int]:
        """/proc/PID/io: wchar = bytes passed to write/pwrite (WAL, checkpoint, sockets)."""
        with open(f"/proc/{self.proc.pid}/io") as f:
            return {k: int(v) for k, v in (line.split(": ") for line in f)}

    def stop(self, timeout=60) -> int:
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return -9


def process_cpu(pid: int) -> tuple[float, float]:
    """A process's (user, system) CPU seconds so far, from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    hz = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / hz, int(fields[12]) / hz


def wait_for(predicate, timeout: float, interval=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = predicate()
        if v:
            return v
        time.sleep(interval)
    return None


H2_REQS = re.compile(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored")
H2_STATUS = re.compile(r"status codes: (\d+) 2xx")
H2_FINISHED = re.compile(r"finished in ([\d.]+)(\w+), ([\d.]+) req/s")


GRPC_HEADERS = ("content-type: application/grpc", "te: trailers")


def h2load(address: str, body_file: str, n: int, c=16, m=32, path="/herald.v1.PushService/Schedule",
           log_file: str | None = None, timeout=600, threads=1, headers=GRPC_HEADERS, h1=False):
    """h2load POSTing `body_file` (gRPC by default; `h1` and `headers` for
    HTTP/1.1 JSON, `-m` then being the pipelining depth)."""
    cmd = ["h2load", *(["--h1"] if h1 else []), "-n", str(n), "-c", str(c), "-m", str(m), "-t", str(threads),
           "-d", body_file, *[arg for header in headers for arg in ("-H", header)], f"http://{address}{path}"]
    if log_file:
        cmd[1:1] = ["--log-file", log_file]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout).stdout
    r = {"raw": out}
    if (mm := H2_REQS.search(out)):
        r.update(total=int(mm[1]), done=int(mm[3]), succeeded=int(mm[4]), failed=int(mm[5]), errored=int(mm[6]))
    if (mm := H2_FINISHED.search(out)):
        r["req_s"] = float(mm[3])
        r["elapsed"] = float(mm[1]) / (1000 if mm[2] == "ms" else 1)
    if (mm := H2_STATUS.search(out)):
        r["2xx"] = int(mm[1])
    if log_file:
        lat = []
        with open(log_file) as f:
            for line in f:
                parts = line.split("\t")
                if len(parts) >= 3 and parts[1] == "200":
                    lat.append(int(parts[2]) / 1000.0)
        lat.sort()
        r["lat_ms"] = lat
    return r


def pct(sorted_values, q):
    if not sorted_values:
        return float("nan")
    i = min(len(sorted_values) - 1, max(0, int(round(q / 100.0 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[i]


def rmtree(path):
    shutil.rmtree(path, ignore_errors=True)


def bench_tmp(prefix):
    base = os.environ.get("BENCH_TMP", "/tmp")
    return tempfile.mkdtemp(prefix=prefix, dir=base)


def token_for(i: int) -> str:
    """A distinct 64-hex-digit APNs device token per index."""
    return f"{i:08x}" * 8


def fcm_token_for(i: int) -> str:
    """A distinct FCM registration token per index (the shape of a real one, ~160 characters)."""
    return f"bench{i:08x}:APA91b" + "K3a_9-Zq" * 18


def register_users(h: Herald, users: list[str], environment="APNS_ENVIRONMENT_SANDBOX", platform="PLATFORM_IOS",
                   bundle=BUNDLE, first=0):
    """One device per user (token_for(first + index), fcm_token_for on Android); futures, bounded by the list."""
    s = stubs()
    stub = h.devices()
    android = platform == "PLATFORM_ANDROID"
    futures = [stub.RegisterDevice.future(s.d.RegisterDeviceRequest(
        bundle_id=bundle, platform=getattr(s.t, platform), user_id=u,
        device_token=fcm_token_for(first + i) if android else token_for(first + i), locale="en-US",
        timezone="Europe/Zurich", **({} if android else {"environment": getattr(s.t, environment)})), timeout=30)
        for i, u in enumerate(users)]
    for f in futures:
        f.result()


def schedule_bulk(h: Herald, tmp: str, user: str, n: int, after: float, c=16, m=32, **kw) -> dict:
    """n Schedule requests for `user` due at `after` (epoch s) through h2load;
    the body is verified once with grpcio (the first of the n)."""
    req = schedule_request(user=user, key="", after=after, **kw)
    body = os.path.join(tmp, f"body-{user}.bin")
    with open(body, "wb") as f:
        f.write(framed(req))
    h.push().Schedule(req, timeout=10)
    r = h2load(h.address, body, n - 1, c=min(c, max(1, (n - 1) // m or 1)), m=m) if n > 1 else {"succeeded": 0}
    r["succeeded"] = r.get("succeeded", 0) + 1
    return r


class Perf:
    """`perf record -g` on one PID for the duration of a `with` block (optional)."""

    def __init__(self, pid: int, out: str | None, freq=499, call_graph: str | None = "dwarf,16384"):
        self.pid, self.out, self.freq, self.proc = pid, out, freq, None
        self.call_graph = ["--call-graph", call_graph] if call_graph else []  # None: a flat profile

    def __enter__(self):
        if self.out:
            self.proc = subprocess.Popen(["perf", "record", "-F", str(self.freq), *self.call_graph,
                                          "-o", self.out, "-p", str(self.pid)],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        if self.proc:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def thread_cpu(pid: int) -> dict[int, tuple[str, float, float]]:
    """tid → (comm, user+sys seconds, seconds runnable but not running, sys seconds) per thread of pid."""
    hz = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                s = f.read()
        except OSError:
            continue
        comm = s[s.index("(") + 1:s.rindex(")")]
        fields = s.rsplit(")", 1)[1].split()
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                runq = int(f.read().split()[1]) / 1e9  # time runnable but waiting for a CPU
        except (OSError, IndexError, ValueError):
            runq = 0.0
        out[int(tid)] = (comm, (int(fields[11]) + int(fields[12])) / hz, runq, int(fields[12]) / hz)
    return out


def thread_cpu_delta(before, after, top=6) -> str:
    rows = []
    for tid, (comm, cpu, runq, sys_) in after.items():
        b = before.get(tid, (comm, 0.0, 0.0, 0.0))
        rows.append((cpu - b[1], runq - b[2], tid, comm, sys_ - b[3]))
    rows.sort(reverse=True)
    return ", ".join(f"{comm}[{tid}] cpu {d:.2f}s (sys {s:.2f}s) runq-wait {w:.2f}s" for d, w, tid, comm, s in rows[:top] if d > 0.005)


def tail_lines(path: str, stop, on_lines):
    """Follows a growing file (a simulator's --sim-record) until `stop` (a
    threading.Event) is set: calls on_lines(arrival_time, lines) for each
    batch of complete lines, polling every 2 ms (waits for the file first)."""
    while not os.path.exists(path) and not stop.is_set():
        time.sleep(0.002)
    if stop.is_set():
        return
    with open(path, "rb") as f:
        buf = b""
        while not stop.is_set():
            chunk = f.read()
            now = time.time()
            if not chunk:
                time.sleep(0.002)
                continue
            buf += chunk
            *lines, buf = buf.split(b"\n")
            if lines:
                on_lines(now, lines)
