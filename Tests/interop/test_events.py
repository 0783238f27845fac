"""StreamEvents (SPEC §3, issue 27) through the real binary and stock grpcio:
requests checked hostile first (a bad cursor, another bundle's token, past
the bound on open streams); a consumer that reconnects every few events with
its last cursor sees exactly the log, in order — while kill -9 restarts the
server underneath (SQLite), and on two PostgreSQL replicas that both
dispatch; filters give exactly the matching subset; 100 consumers at once.

The end of what a test waits for is a sentinel: a message scheduled once
everything before it is finished (its NO_DEVICES event comes after every
earlier event in the log), so no test waits for silence."""
from __future__ import annotations

import os
import signal
import threading
import time
import uuid

import grpc
import pytest

from conftest import start_herald
from test_delivery import Record
from test_postgres import database  # noqa: F401 (the fixture)

BUNDLE = "com.example.app"
TOKEN = "a1" * 32


class Api:
    def __init__(self, stubs, server, metadata=None):
        self.stubs, self.server, self.metadata = stubs, server, metadata
        self.channel = grpc.insecure_channel(server.address)
        self.push = stubs.push_pb2_grpc.PushServiceStub(self.channel)
        self.devices = stubs.device_pb2_grpc.DeviceServiceStub(self.channel)

    def register(self, user, token=TOKEN):
        t, d = self.stubs.types_pb2, self.stubs.device_pb2
        self.devices.RegisterDevice(d.RegisterDeviceRequest(
            bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=user, device_token=token, locale="en",
            environment=t.APNS_ENVIRONMENT_SANDBOX), metadata=self.metadata, timeout=10)

    def schedule(self, user, key, campaign="c1"):
        t, p = self.stubs.types_pb2, self.stubs.push_pb2
        return self.push.Schedule(p.ScheduleRequest(
            bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=user, campaign_id=campaign, idempotency_key=key,
            delivery_method=t.DELIVERY_METHOD_TRADITIONAL, deliver_within_hours=1,
            content=t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="Body"))),
            metadata=self.metadata, timeout=10)

    def state(self, key):
        r = self.stubs.read_pb2
        reply = self.push.GetMessage(r.GetMessageRequest(bundle_id=BUNDLE, idempotency_key=key), metadata=self.metadata,
                                     timeout=10)
        return self.stubs.types_pb2.MessageState.Name(reply.message.state)

    def wait_finished(self, keys, timeout=60.0):
        deadline = time.monotonic() + timeout
        for key in keys:
            while self.state(key) in ("MESSAGE_STATE_SCHEDULED", "MESSAGE_STATE_HANDED_OFF"):
                assert time.monotonic() < deadline, key
                time.sleep(0.05)

    def stream(self, cursor="", from_start=False, campaign="", kinds=(), timeout=60.0):
        r = self.stubs.read_pb2
        return self.push.StreamEvents(r.StreamEventsRequest(
            bundle_id=BUNDLE, cursor=cursor, from_start=from_start, campaign_id=campaign,
            kinds=[r.EventKind.Value(k) for k in kinds]), metadata=self.metadata, timeout=timeout)

    def close(self):
        self.channel.close()


def kind(stubs, event):
    return stubs.read_pb2.EventKind.Name(event.kind)


def is_sentinel_end(stubs, key):
    return lambda e: e.idempotency_key == key and kind(stubs, e) == "EVENT_KIND_NO_DEVICES"


def read_until(call, done, limit=100_000):
    """Events of a stream up to and including the first that `done` accepts."""
    out = []
    for event in call:
        out.append(event)
        if done(event) or len(out) >= limit:
            call.cancel()
            return out
    raise AssertionError(f"the stream ended after {len(out)} events without the end marker")


def sentinel(api):
    """Schedules a message to a user with no device: its NO_DEVICES event
    ends what a test reads. Returns its key."""
    key = "sentinel-" + uuid.uuid4().hex[:8]
    api.schedule("nobody-" + uuid.uuid4().hex[:8], key, campaign="sentinel")
    return key


def start(tmp_path, *extra, record=None, data=None):
    record = record or Record(str(tmp_path / "apns-sim.jsonl"))
    server = start_herald("--grace-seconds", "0", "--sim-record", record.path, *extra, data_dir=data or str(tmp_path / "data"))
    return server, record


# MARK: hostile first

def test_a_bad_cursor_is_invalid_argument_and_another_bundles_token_sees_nothing(stubs, tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text("mine mine-token-0123456789abcdef com.example.app\nother other-token-0123456789abcdef com.other.app\n")
    os.chmod(tokens, 0o600)
    server, _ = start(tmp_path, "--tokens-file", str(tokens))
    mine = Api(stubs, server, [("authorization", "Token mine-token-0123456789abcdef")])
    other = Api(stubs, server, [("authorization", "Token other-token-0123456789abcdef")])
    try:
        for cursor in ("nope", "e1.1", "e1.-5.0", "e9.1.0", "e1.1.0 ", "x" * 5000):
            with pytest.raises(grpc.RpcError) as error:
                next(mine.stream(cursor=cursor, timeout=10))
            assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT, cursor
            assert "cursor" in error.value.details()
        with pytest.raises(grpc.RpcError) as error:
            next(mine.stream(cursor="e1.1.0", from_start=True, timeout=10))
        assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        mine.schedule("u-" + uuid.uuid4().hex[:6], "k-mine")
        with pytest.raises(grpc.RpcError) as error:
            next(other.stream(from_start=True, timeout=10))
        assert error.value.code() == grpc.StatusCode.NOT_FOUND
        with pytest.raises(grpc.RpcError) as error:
            next(Api(stubs, server).stream(from_start=True, timeout=10))
        assert error.value.code() == grpc.StatusCode.UNAUTHENTICATED
        first = next(mine.stream(from_start=True, timeout=10))
        assert first.idempotency_key == "k-mine" and kind(stubs, first) == "EVENT_KIND_SCHEDULED"
    finally:
        mine.close()
        other.close()
        assert server.stop() == 0


def test_streams_past_the_bound_are_resource_exhausted_and_a_closed_one_frees_its_place(stubs, tmp_path):
    server, _ = start(tmp_path, "--max-event-streams", "2")
    api = Api(stubs, server)
    try:
        key = sentinel(api)
        open_calls = [api.stream(from_start=True) for _ in range(2)]
        for call in open_calls:  # both are running (each got the first event)
            assert next(call).idempotency_key == key
        with pytest.raises(grpc.RpcError) as error:
            next(api.stream(from_start=True, timeout=10))
        assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "--max-event-streams" in error.value.details()
        open_calls[0].cancel()
        deadline = time.monotonic() + 20
        while True:  # the cancelled stream's place comes back once the server sees the reset
            try:
                assert next(api.stream(from_start=True, timeout=10)).idempotency_key == key
                break
            except grpc.RpcError as error:
                assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and time.monotonic() < deadline
                time.sleep(0.05)
        open_calls[1].cancel()
    finally:
        api.close()
        assert server.stop() == 0


# MARK: exactly once, in order

def resuming_read(stubs, apis, done, every):
    """Reads with a new stream every `every` events, resuming with the last
    cursor; `apis()` gives the current server's Api (it may change)."""
    out, cursor = [], ""
    while True:
        api = apis()
        call = api.stream(cursor=cursor, from_start=not cursor, timeout=60)
        try:
            for event in call:
                out.append(event)
                cursor = event.cursor
                if done(event):
                    call.cancel()
                    return out
                if len(out) % every == 0:
                    call.cancel()
                    break
        except grpc.RpcError as error:
            # The server was killed under the stream: resume on the new one.
            assert error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED), error
            time.sleep(0.05)  # a backoff between reconnections, not a wait for an event
        except ValueError:  # the old channel was closed under the call
            time.sleep(0.05)


def test_a_resuming_consumer_sees_the_log_exactly_once_across_kill_9(stubs, tmp_path):
    """30 messages paced at 10/s; a consumer reconnects every 7 events with
    its last cursor while the server is killed (-9) and restarted twice
    underneath: what it read is exactly the log as a fresh read from the
    start shows it — every cursor once, in order."""
    spec = f"bundles={BUNDLE} max-per-second=10"
    server, record = start(tmp_path, "--delivery-policy", spec)
    current = {"api": Api(stubs, server), "server": server}
    keys = [f"k-{i}" for i in range(30)]
    try:
        current["api"].register("alice")
        for key in keys:
            current["api"].schedule("alice", key)
        results = {}

        def consume():
            results["read"] = resuming_read(stubs, lambda: current["api"], lambda e: e.campaign_id == "sentinel"
                                            and kind(stubs, e) == "EVENT_KIND_NO_DEVICES", every=7)

        consumer = threading.Thread(target=consume)
        consumer.start()
        for _ in range(2):
            record.wait_for(lambda d: True, count=len(record.lines()) + 5, timeout=60)
            os.kill(current["server"].proc.pid, signal.SIGKILL)
            current["server"].proc.wait()
            server, _ = start(tmp_path, "--delivery-policy", spec, record=record)
            old = current["api"]
            current.update(api=Api(stubs, server), server=server)
            old.close()
        current["api"].wait_finished(keys)
        sentinel(current["api"])
        consumer.join(timeout=120)
        assert "read" in results, "the consumer did not reach the end"
        whole = read_until(current["api"].stream(from_start=True), lambda e: e.campaign_id == "sentinel"
                           and kind(stubs, e) == "EVENT_KIND_NO_DEVICES")
        assert [e.cursor for e in results["read"]] == [e.cursor for e in whole]
        assert len({e.cursor for e in whole}) == len(whole)
        sent = {e.idempotency_key for e in whole if kind(stubs, e) == "EVENT_KIND_SENT" and not e.device_token}
        assert sent | {e.idempotency_key for e in whole if kind(stubs, e) == "EVENT_KIND_UNCONFIRMED"} >= set(keys)
    finally:
        current["api"].close()
        assert current["server"].stop() == 0


def test_two_postgres_replicas_one_consumer_sees_both_exactly_once(stubs, tmp_path, database):
    """Both replicas dispatch 40 messages; a consumer on replica A,
    reconnecting every 9 events, reads exactly what a fresh read on replica
    B shows, and it holds events of messages scheduled on each."""
    records = [Record(str(tmp_path / f"{n}.jsonl")) for n in ("a", "b")]
    servers = [start_herald("--store", database, "--replica-id", n, "--grace-seconds", "0", "--sim-record", r.path,
                            "--delivery-policy", f"bundles={BUNDLE} max-per-second=20", data_dir=str(tmp_path / f"d-{n}"))
               for n, r in zip(("a", "b"), records)]
    apis = [Api(stubs, s) for s in servers]
    try:
        apis[0].register("alice")
        keys = [f"k-pg-{i}" for i in range(40)]
        results = {}
        end = lambda e: e.campaign_id == "sentinel" and kind(stubs, e) == "EVENT_KIND_NO_DEVICES"  # noqa: E731
        consumer = threading.Thread(target=lambda: results.update(read=resuming_read(stubs, lambda: apis[0], end, every=9)))
        consumer.start()
        for i, key in enumerate(keys):
            apis[i % 2].schedule("alice", key)
        apis[1].wait_finished(keys)
        sentinel(apis[1])
        consumer.join(timeout=120)
        assert "read" in results, "the consumer did not reach the end"
        whole = read_until(apis[1].stream(from_start=True), end)
        assert [e.cursor for e in results["read"]] == [e.cursor for e in whole]
        assert len({e.cursor for e in whole}) == len(whole)
        assert {e.idempotency_key for e in whole if kind(stubs, e) == "EVENT_KIND_SCHEDULED"} >= set(keys)
        assert all(r.lines() for r in records), "both replicas dispatched"
    finally:
        for api in apis:
            api.close()
        for server in servers:
            assert server.stop() == 0


def test_filters_give_exactly_the_matching_subset(stubs, tmp_path):
    server, _ = start(tmp_path)
    api = Api(stubs, server)
    try:
        api.register("alice")
        keys = []
        for i in range(12):
            keys.append(f"k-f-{i}")
            api.schedule("alice" if i % 3 else "nobody", keys[-1], campaign="c-even" if i % 2 == 0 else "c-odd")
        api.wait_finished(keys)
        end_key = sentinel(api)
        whole = read_until(api.stream(from_start=True), is_sentinel_end(stubs, end_key))
        expected = [e.cursor for e in whole if e.campaign_id == "c-even"
                    and kind(stubs, e) in ("EVENT_KIND_SENT", "EVENT_KIND_NO_DEVICES")]
        assert expected
        filtered = read_until(api.stream(from_start=True, campaign="c-even", kinds=("EVENT_KIND_SENT", "EVENT_KIND_NO_DEVICES")),
                              lambda e: e.cursor == expected[-1])
        assert [e.cursor for e in filtered] == expected
    finally:
        api.close()
        assert server.stop() == 0


def test_a_hundred_consumers_at_once_each_get_the_whole_log(stubs, tmp_path):
    server, _ = start(tmp_path)
    apis = [Api(stubs, server) for _ in range(4)]  # 25 streams per connection
    try:
        apis[0].register("alice")
        for i in range(10):
            apis[0].schedule("alice", f"k-h-{i}")
        apis[0].wait_finished([f"k-h-{i}" for i in range(10)])
        end_key = sentinel(apis[0])
        whole = [e.cursor for e in read_until(apis[0].stream(from_start=True), is_sentinel_end(stubs, end_key))]
        results, errors = [None] * 100, []

        def consume(index):
            try:
                results[index] = [e.cursor for e in read_until(apis[index % 4].stream(from_start=True),
                                                               is_sentinel_end(stubs, end_key))]
            except Exception as error:  # pragma: no cover - reported below
                errors.append(repr(error))

        threads = [threading.Thread(target=consume, args=(i,)) for i in range(100)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not errors, errors[:3]
        assert all(r == whole for r in results)
    finally:
        for api in apis:
            api.close()
        assert server.stop() == 0


def test_the_readme_consumer_keeps_its_cursor_and_removes_a_dead_token(stubs, tmp_path):
    """The README's consumer, run as written: the APNs simulator answers 410
    for one token, the device is removed, and the consumer says so and
    stores the cursor of the last event."""
    import pathlib
    import subprocess
    import sys
    readme = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = readme.split("<!-- consumer -->\n```python\n", 1)[1].split("```", 1)[0]
    script = tmp_path / "consumer.py"
    script.write_text(block)
    dead = "de" * 32
    # Unregistered as of an hour from now: after the device registers, so
    # Herald removes it (a 410 older than the registration would not).
    server, record = start(tmp_path, "--sim-unregistered", f"{dead}:{int(time.time() * 1000) + 3_600_000}")
    api = Api(stubs, server)
    stubs_dir = pathlib.Path(stubs.read_pb2.__file__).parents[2]
    consumer = subprocess.Popen([sys.executable, str(script), server.address, BUNDLE], cwd=tmp_path,
                                stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(stubs_dir)})
    try:
        api.register("alice", token=dead)
        api.schedule("alice", "k-dead")
        import queue
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in consumer.stdout], daemon=True).start()
        line = lines.get(timeout=60)
        assert line.strip() == f"removed {dead}", line
        api.wait_finished(["k-dead"])
        end_key = sentinel(api)
        whole = read_until(api.stream(from_start=True), is_sentinel_end(stubs, end_key))
        cursor_file = tmp_path / "herald-events.cursor"
        deadline = time.monotonic() + 30
        while not (cursor_file.exists() and cursor_file.read_text() == whole[-1].cursor):
            assert time.monotonic() < deadline, (cursor_file.exists() and cursor_file.read_text(), whole[-1].cursor)
            time.sleep(0.05)
    finally:
        consumer.kill()
        consumer.wait()
        api.close()
        assert server.stop() == 0
