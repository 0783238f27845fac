"""The bundle's delivery policy (SPEC §4b) through the real binary, stock
grpcio and the bundled APNs simulator: quiet hours hold a device (WAITING,
`not_before`) until they end, then it is sent — across kill -9 too; a
transactional message skips them; caps withhold (SUPPRESSED) or hold a
second message; `local_send_time` plans each device in its own zone; Status
and /metrics show the policy.

Time is real: quiet hours are chosen to end at the next minute boundary at
least 15 s away, so the one wait for their end is bounded (≤ 75 s) and no
test sleeps for an event: each polls for it, bounded."""
from __future__ import annotations

import datetime as dt
import os
import signal
import threading
import time
import urllib.request
import uuid
from zoneinfo import ZoneInfo

import grpc
import pytest

from conftest import start_herald
from test_delivery import Record, with_key
from test_postgres import database  # noqa: F401 (the fixture)

BUNDLE = "com.example.app"
TOKEN_A = "a1" * 32
TOKEN_B = "b2" * 32


def utc_now():
    return dt.datetime.now(dt.timezone.utc)


def quiet_until_next_minute():
    """A quiet period (UTC `HH:MM-HH:MM`) that holds now and ends at the next
    minute boundary at least 15 s away; its end as a datetime."""
    now = utc_now()
    end = (now + dt.timedelta(seconds=15 + 60)).replace(second=0, microsecond=0)
    if (end - now).total_seconds() > 75:
        end -= dt.timedelta(minutes=1)
    start = end - dt.timedelta(hours=2)
    return f"{start:%H:%M}-{end:%H:%M}", end


class Policy:
    def __init__(self, stubs, server):
        self.stubs = stubs
        self.server = server
        self.channel = grpc.insecure_channel(server.address)
        self.push = stubs.push_pb2_grpc.PushServiceStub(self.channel)
        self.devices = stubs.device_pb2_grpc.DeviceServiceStub(self.channel)

    def register(self, user, token, zone):
        t, d = self.stubs.types_pb2, self.stubs.device_pb2
        self.devices.RegisterDevice(d.RegisterDeviceRequest(
            bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=user, device_token=token, locale="en",
            timezone=zone, environment=t.APNS_ENVIRONMENT_SANDBOX), timeout=10)

    def schedule(self, user, key, *, hours=None, seconds=None, campaign="daily", delivery_method=None, **extra):
        t, p = self.stubs.types_pb2, self.stubs.push_pb2
        request = p.ScheduleRequest(
            bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=user, campaign_id=campaign, idempotency_key=key,
            delivery_method=delivery_method or t.DELIVERY_METHOD_TRADITIONAL,
            content=t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="Body")), **extra)
        if seconds is not None:
            request.target_delivery_time = (utc_now() + dt.timedelta(seconds=seconds)).isoformat()
        else:
            request.deliver_within_hours = hours or 1
        return self.push.Schedule(request, timeout=10)

    def message(self, key):
        r = self.stubs.read_pb2
        return self.push.GetMessage(r.GetMessageRequest(bundle_id=BUNDLE, idempotency_key=key), timeout=10)

    def wait(self, key, predicate, timeout=20.0):
        deadline = time.monotonic() + timeout
        while True:
            reply = self.message(key)
            if predicate(reply):
                return reply
            assert time.monotonic() < deadline, reply
            time.sleep(0.05)

    def outcome(self, name):
        return self.stubs.read_pb2.DeviceOutcome.Value(name)

    def state(self, name):
        return self.stubs.types_pb2.MessageState.Value(name)

    def state_name(self, message):
        return self.stubs.types_pb2.MessageState.Name(message.message.state)

    def close(self):
        self.channel.close()


def rfc3339(text):
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def start(tmp_path, *policies, data=None, record=None, extra=()):
    record = record or Record(str(tmp_path / "apns-sim.jsonl"))
    args = ["--grace-seconds", "0", "--sim-record", record.path, *extra]
    for spec in policies:
        args += ["--delivery-policy", spec]
    server = start_herald(*args, data_dir=data or str(tmp_path / "data"))
    return server, record


def user():
    return "user-" + uuid.uuid4().hex[:8]


def test_quiet_hours_hold_until_they_end_across_kill_9_and_transactional_skips_them(stubs, tmp_path):
    quiet, end = quiet_until_next_minute()
    spec = f"bundles={BUNDLE} timezone=UTC quiet-hours={quiet}"
    server, record = start(tmp_path, spec, extra=("--admin-port", "0"))
    api = Policy(stubs, server)
    u = user()
    api.register(u, TOKEN_A, "UTC")
    reply = api.schedule(u, "k-quiet")
    assert rfc3339(reply.send_at) == end  # the planned push: the quiet period's end
    held = api.wait("k-quiet", lambda m: m.devices and m.devices[0].outcome == api.outcome("DEVICE_OUTCOME_WAITING"))
    device = held.devices[0]
    assert device.reason == "quiet_hours" and rfc3339(device.not_before) == end
    assert held.message.state == api.state("MESSAGE_STATE_SCHEDULED")
    events = [stubs.read_pb2.TimelineEvent.Name(e.event) for e in held.timeline]
    assert "TIMELINE_EVENT_DEFERRED" in events

    # A transactional message to the same device goes at once.
    api.schedule(u, "k-receipt", transactional=True)
    record.wait_for(with_key("k-receipt"), timeout=20)
    assert not [d for d in record.lines() if with_key("k-quiet")(d)]

    # Status names the policy; /metrics counts the hold.
    status = api.push.Status(stubs.push_pb2.StatusRequest(), timeout=10)
    assert [(list(p.bundle_ids), p.spec) for p in status.delivery_policies] == [([BUNDLE], spec)]
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{server.admin_port}/metrics", timeout=10).read().decode()
    assert 'herald_policy_holds_total{reason="quiet_hours"} 1' in metrics

    # kill -9 while held: nothing lost, nothing sent twice.
    os.kill(server.proc.pid, signal.SIGKILL)
    server.proc.wait()
    api.close()
    server, _ = start(tmp_path, spec, record=record)
    api = Policy(stubs, server)
    try:
        assert api.message("k-quiet").devices[0].outcome == api.outcome("DEVICE_OUTCOME_WAITING")
        sent = record.wait_for(with_key("k-quiet"), timeout=(end - utc_now()).total_seconds() + 30)
        assert len(sent) == 1
        assert utc_now() >= end
        final = api.wait("k-quiet", lambda m: m.message.state == api.state("MESSAGE_STATE_SENT"))
        assert [d.outcome for d in final.devices] == [api.outcome("DEVICE_OUTCOME_SENT")]
        assert len([d for d in record.lines() if with_key("k-quiet")(d)]) == 1
    finally:
        api.close()
        assert server.stop() == 0


def test_a_context_aware_hand_off_carries_the_quiet_periods_inside_its_window(stubs, tmp_path):
    now = utc_now()
    start_at = (now + dt.timedelta(minutes=30)).replace(second=0, microsecond=0)
    end_at = start_at + dt.timedelta(minutes=20)
    server, record = start(tmp_path, f"bundles={BUNDLE} quiet-hours={start_at:%H:%M}-{end_at:%H:%M}")
    api = Policy(stubs, server)
    try:
        u = user()
        api.register(u, TOKEN_A, "UTC")
        t = stubs.types_pb2
        api.schedule(u, "k-handoff", seconds=7200, delivery_method=t.DELIVERY_METHOD_CONTEXT_AWARE)
        handoff = record.wait_for(with_key("k-handoff"))[0]
        assert handoff["headers"]["apns-push-type"] == "background"
        assert handoff["payload"]["ctx_quiet"] == [[int(start_at.timestamp()), int(end_at.timestamp())]]
    finally:
        api.close()
        assert server.stop() == 0


def test_a_cap_withholds_or_holds_the_second_message(stubs, tmp_path):
    server, record = start(tmp_path, f"bundles={BUNDLE} cap=1/1h")
    api = Policy(stubs, server)
    try:
        # Two messages in a 30-minute window: one SENT, one SUPPRESSED.
        u = user()
        api.register(u, TOKEN_A, "Europe/Berlin")
        api.schedule(u, "k-cap-1", seconds=1800)
        api.schedule(u, "k-cap-2", seconds=1800)
        finished = {"MESSAGE_STATE_SENT", "MESSAGE_STATE_SUPPRESSED"}
        ends = sorted(api.state_name(api.wait(k, lambda m: api.state_name(m) in finished)) for k in ("k-cap-1", "k-cap-2"))
        assert ends == ["MESSAGE_STATE_SENT", "MESSAGE_STATE_SUPPRESSED"]
        suppressed = [api.message(k) for k in ("k-cap-1", "k-cap-2")]
        suppressed = [m for m in suppressed if api.state_name(m) == "MESSAGE_STATE_SUPPRESSED"][0]
        assert [(d.outcome, d.reason) for d in suppressed.devices] == [
            (api.outcome("DEVICE_OUTCOME_SUPPRESSED"), "frequency_cap")]

        # With a 3-hour window the second waits until an hour after the first.
        v = user()
        api.register(v, TOKEN_B, "Europe/Berlin")
        api.schedule(v, "k-cap-3", hours=3)
        first = api.wait("k-cap-3", lambda m: api.state_name(m) == "MESSAGE_STATE_SENT")
        api.schedule(v, "k-cap-4", hours=3)
        held = api.wait("k-cap-4", lambda m: m.devices and m.devices[0].outcome == api.outcome("DEVICE_OUTCOME_WAITING"))
        assert held.devices[0].reason == "frequency_cap"
        gap = (rfc3339(held.devices[0].not_before) - rfc3339(first.devices[0].at)).total_seconds()
        assert 3600 - 10 <= gap <= 3600, gap
        assert len([d for d in record.lines() if d["device_token"] == TOKEN_B]) == 1

        # Render names the bundle's policy (it changes when an alert goes, never what it is).
        t, p = stubs.types_pb2, stubs.push_pb2
        rendered = api.push.Render(p.RenderRequest(
            bundle_id=BUNDLE, platform=t.PLATFORM_IOS,
            content=t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="Body"))), timeout=10)
        assert [w for w in rendered.warnings if w.startswith(f"delivery policy bundles={BUNDLE} cap=1/1h:")], rendered.warnings
    finally:
        api.close()
        assert server.stop() == 0


def test_local_send_time_plans_each_device_in_its_own_zone(stubs, tmp_path):
    server, record = start(tmp_path)
    api = Policy(stubs, server)
    try:
        u = user()
        api.register(u, TOKEN_A, "America/Los_Angeles")
        api.register(u, TOKEN_B, "Europe/Berlin")
        reply = api.schedule(u, "k-local", seconds=48 * 3600, local_send_time="09:00")
        held = api.wait("k-local", lambda m: len(m.devices) == 2 and all(
            d.outcome == api.outcome("DEVICE_OUTCOME_WAITING") for d in m.devices))
        planned = {d.device_token: rfc3339(d.not_before) for d in held.devices}
        assert all(d.reason == "local_time" for d in held.devices)
        # 09:00 in each zone: Berlin's comes first, Los Angeles's 9 hours later.
        assert (planned[TOKEN_A] - planned[TOKEN_B]).total_seconds() % (24 * 3600) == 9 * 3600
        assert rfc3339(reply.send_at) == min(planned.values())
        for token, at in planned.items():
            zone = "America/Los_Angeles" if token == TOKEN_A else "Europe/Berlin"
            local = at.astimezone(ZoneInfo(zone))
            assert (local.hour, local.minute) == (9, 0)
        assert not record.lines()
    finally:
        api.close()
        assert server.stop() == 0


def test_a_local_send_time_outside_the_window_suppresses(stubs, tmp_path):
    server, record = start(tmp_path)
    api = Policy(stubs, server)
    try:
        u = user()
        api.register(u, TOKEN_A, "UTC")
        now = utc_now()
        # A 10-minute window: a local time two hours away never falls inside it.
        away = (now + dt.timedelta(hours=2)).strftime("%H:%M")
        api.schedule(u, "k-never", seconds=600, local_send_time=away)
        done = api.wait("k-never", lambda m: api.state_name(m) == "MESSAGE_STATE_SUPPRESSED")
        assert [(d.outcome, d.reason) for d in done.devices] == [(api.outcome("DEVICE_OUTCOME_SUPPRESSED"), "local_time")]
        assert not record.lines()
    finally:
        api.close()
        assert server.stop() == 0


def test_fifty_concurrent_schedules_on_two_postgres_replicas_under_cap_3_send_exactly_3(stubs, tmp_path, database):
    spec = f"bundles={BUNDLE} cap=3/1h"
    records = [Record(str(tmp_path / f"{name}.jsonl")) for name in ("a", "b")]
    servers = [start_herald("--store", database, "--replica-id", name, "--grace-seconds", "0", "--sim-record", record.path,
                            "--delivery-policy", spec, data_dir=str(tmp_path / f"data-{name}"))
               for name, record in zip(("a", "b"), records)]
    apis = [Policy(stubs, server) for server in servers]
    try:
        u = user()
        apis[0].register(u, TOKEN_A, "UTC")
        barrier = threading.Barrier(10)
        errors = []

        def send(worker):
            barrier.wait(timeout=30)
            for i in range(5):
                try:
                    apis[worker % 2].schedule(u, f"k-{worker}-{i}", seconds=1800)
                except grpc.RpcError as error:  # pragma: no cover - reported below
                    errors.append(error.code())

        threads = [threading.Thread(target=send, args=(w,)) for w in range(10)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not errors
        keys = [f"k-{w}-{i}" for w in range(10) for i in range(5)]
        finished = {"MESSAGE_STATE_SENT", "MESSAGE_STATE_SUPPRESSED"}
        ends = [apis[1].state_name(apis[1].wait(k, lambda m: apis[1].state_name(m) in finished, timeout=60)) for k in keys]
        assert ends.count("MESSAGE_STATE_SENT") == 3 and ends.count("MESSAGE_STATE_SUPPRESSED") == 47, ends
        delivered = [d for record in records for d in record.lines()]
        assert len(delivered) == 3, delivered
    finally:
        for api in apis:
            api.close()
        for server in servers:
            assert server.stop() == 0


def test_max_per_second_paces_a_bundle(stubs, tmp_path):
    server, record = start(tmp_path, f"bundles={BUNDLE} max-per-second=20", extra=("--admin-port", "0"))
    api = Policy(stubs, server)
    try:
        users = [user() for _ in range(60)]
        for index, u in enumerate(users):
            api.register(u, f"{index:02x}" * 32, "UTC")
        started = time.monotonic()
        for index, u in enumerate(users):
            api.schedule(u, f"k-rate-{index}")
        record.wait_for(lambda d: d["payload"].get("ctx_idempotency_key", "").startswith("k-rate-"), count=60, timeout=60)
        elapsed = time.monotonic() - started
        # 60 pushes at 20/s, 100 ms of burst: never faster than about 2.9 s.
        assert elapsed >= (60 - 3) / 20, elapsed
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{server.admin_port}/metrics", timeout=10).read().decode()
        assert "herald_throttle_wait_seconds_count 60" in metrics
    finally:
        api.close()
        assert server.stop() == 0


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_a_transactional_push_overtakes_its_bundles_throttled_backlog(stubs, tmp_path, store, request):
    """A bundle paced at 5/s with 40 pushes waiting (8 s of backlog): a
    transactional push scheduled then goes before the backlog — at most the
    pushes already given their slots (one second's worth) leave between its
    Schedule and its delivery — on the embedded store (the due index's
    urgent slot) and on PostgreSQL (the claim order)."""
    extra = ()
    if store == "postgres":
        extra = ("--store", request.getfixturevalue("database"), "--replica-id", "a")
    server, record = start(tmp_path, f"bundles={BUNDLE} max-per-second=5", extra=extra)
    api = Policy(stubs, server)
    try:
        u = user()
        api.register(u, TOKEN_A, "UTC")
        for i in range(40):
            api.schedule(u, f"k-backlog-{i}")
        record.wait_for(lambda d: d["payload"].get("ctx_idempotency_key", "").startswith("k-backlog-"), count=3, timeout=30)
        before = len(record.lines())
        api.schedule(u, "k-urgent", transactional=True)
        record.wait_for(with_key("k-urgent"), timeout=30)
        record.wait_for(lambda d: d["payload"].get("ctx_idempotency_key", "").startswith("k-backlog-"), count=40, timeout=60)
        keys = [d["payload"].get("ctx_idempotency_key") for d in record.lines()]
        between = keys.index("k-urgent") - before
        overtaken = len(keys) - keys.index("k-urgent") - 1
        assert between <= 6, (before, keys)
        assert overtaken >= 30, keys  # the backlog was still there
    finally:
        api.close()
        assert server.stop() == 0


def test_max_per_second_holds_across_two_postgres_replicas(stubs, tmp_path, database):
    """600 pushes of one bundle due at one instant, two PostgreSQL replicas,
    40/s for the bundle: over every 10 s of the drain the two together send
    400 within 10 % (SPEC §4b: "all replicas together"), each push once;
    both replicas take part. Arrivals are sampled from the simulators'
    records every 20 ms by a thread started before the first Schedule (a
    sample's lag costs a window at most one or two pushes)."""
    rate, count, lead = 40, 600, 10
    spec = f"bundles={BUNDLE} max-per-second={rate}"
    records = [Record(str(tmp_path / f"{name}.jsonl")) for name in ("a", "b")]
    servers = [start_herald("--store", database, "--replica-id", name, "--grace-seconds", "0", "--sim-record", record.path,
                            "--delivery-policy", spec, data_dir=str(tmp_path / f"data-{name}"))
               for name, record in zip(("a", "b"), records)]
    apis = [Policy(stubs, server) for server in servers]
    samples, done = [], threading.Event()

    def sample():
        deadline = time.monotonic() + 180
        while not done.is_set() and time.monotonic() < deadline:
            samples.append((time.monotonic(), sum(len(record.lines()) for record in records)))
            if samples[-1][1] >= count:
                return
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    try:
        u = user()
        apis[0].register(u, TOKEN_A, "UTC")
        due = utc_now() + dt.timedelta(seconds=lead)
        sampler.start()

        def send(worker):
            for i in range(worker, count, 10):
                apis[i % 2].schedule(u, f"k-rate2-{i}", hours=1, deliver_after=due.isoformat())

        threads = [threading.Thread(target=send, args=(w,)) for w in range(10)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert utc_now() < due, f"scheduling {count} took longer than {lead} s: the drain is not measured from its start"
        sampler.join(timeout=180)
        assert samples and samples[-1][1] >= count, samples[-1:]
        keys = [d["payload"]["ctx_idempotency_key"] for record in records for d in record.lines()]
        assert sorted(keys) == sorted(f"k-rate2-{i}" for i in range(count))  # each once
        assert all(record.lines() for record in records), [len(r.lines()) for r in records]
        first = next(t for t, n in samples if n > 0)
        last = samples[-1][0]
        assert last - first >= (count - 1) / rate * 0.9, (first, last)

        def sent_by(t):
            return max((n for s, n in samples if s <= t), default=0)

        windows = []
        t = first
        while t + 10 <= last:
            windows.append(sent_by(t + 10) - sent_by(t))
            t += 0.5
        assert windows, (first, last)
        assert max(windows) <= rate * 10 * 1.1 + 2, windows
        assert min(windows) >= rate * 10 * 0.9 - 2, windows
    finally:
        for api in apis:
            api.close()
        for server in servers:
            assert server.stop() == 0
