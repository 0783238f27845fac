"""Schedule → the bundled APNs simulator, end to end through the real binary:
durable scheduling, per-device locales, cancel, last-request-wins,
context-aware handoff and fallback, 410 handling, crash and restart.

Time is driven with short windows and `--grace-seconds 0`; every wait is for
an event (a line in the simulator's record, a state in Status), bounded."""
from __future__ import annotations

import datetime as dt
import json
import os
import signal
import time
import uuid

import grpc
import pytest

from conftest import start_herald

BUNDLE = "com.example.app"
EN_TOKEN = "a1" * 32
DE_TOKEN = "b2" * 32


class Record:
    """The simulators' delivery record (JSON lines) as it grows: one file for
    both bundled simulators, each line naming its "service" ("apns" or
    "fcm"); `service` picks one kind."""

    def __init__(self, path, service="apns"):
        self.path = path
        self.service = service

    def all_lines(self):
        if not os.path.exists(self.path):
            return []
        with open(self.path) as f:
            # A line still being appended has no newline yet: read it next time.
            return [json.loads(line) for line in f if line.endswith("\n") and line.strip()]

    def lines(self):
        return [d for d in self.all_lines() if d["service"] == self.service]

    def wait_for(self, predicate, count=1, timeout=30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [d for d in self.lines() if predicate(d)]
            if len(found) >= count:
                return found
            time.sleep(0.02)
        raise AssertionError(f"timed out waiting for {count} deliveries; have {self.lines()}")


def with_key(key):
    return lambda d: d["payload"].get("ctx_idempotency_key") == key or d["payload"].get("ctx_revoke") == key


class Client:
    def __init__(self, stubs, address):
        self.stubs = stubs
        self.channel = grpc.insecure_channel(address)
        self.push = stubs.push_pb2_grpc.PushServiceStub(self.channel)
        self.devices = stubs.device_pb2_grpc.DeviceServiceStub(self.channel)

    def register(self, user, token, locale):
        t, d = self.stubs.types_pb2, self.stubs.device_pb2
        return self.devices.RegisterDevice(d.RegisterDeviceRequest(
            bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=user, device_token=token, locale=locale,
            timezone="Europe/Zurich", environment=t.APNS_ENVIRONMENT_SANDBOX), timeout=10)

    def schedule(self, user, key, *, method="DELIVERY_METHOD_TRADITIONAL", after=0.0, within=None, body="Body", **extra):
        t, p = self.stubs.types_pb2, self.stubs.push_pb2
        now = dt.datetime.now(dt.timezone.utc)
        request = p.ScheduleRequest(
            bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=user, campaign_id="daily", idempotency_key=key,
            delivery_method=getattr(t, method),
            content=t.Content(title=t.LocalizedText(translations={"en": "Hello", "de": "Hallo"}),
                              body=t.LocalizedText(translations={"en": body, "de": body + " (de)"}),
                              default_locale="en"), **extra)
        if after:
            request.deliver_after = (now + dt.timedelta(seconds=after)).isoformat()
        if within is None:
            request.deliver_within_hours = 1
        else:
            request.target_delivery_time = (now + dt.timedelta(seconds=within)).isoformat()
        return self.push.Schedule(request, timeout=10)

    def cancel(self, user, key):
        t, p = self.stubs.types_pb2, self.stubs.push_pb2
        return self.push.Cancel(p.CancelRequest(bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=user,
                                                campaign_id="daily", idempotency_key=key), timeout=10)

    def status_counts(self):
        status = self.push.Status(self.stubs.push_pb2.StatusRequest(), timeout=10)
        names = self.stubs.types_pb2.MessageState
        return {names.Name(c.state): c.count for c in status.messages}, status


@pytest.fixture
def env(stubs, tmp_path):
    record = Record(str(tmp_path / "apns-sim.jsonl"))
    server = start_herald("--grace-seconds", "0", "--sim-record", record.path,
                          "--sim-unregistered", f"{'c3' * 32}:{int(time.time() * 1000) + 3_600_000}",
                          "--sim-unregistered", f"{'d4' * 32}:1000",
                          data_dir=str(tmp_path / "data"))
    client = Client(stubs, server.address)
    yield server, client, record
    client.channel.close()
    if server.proc.poll() is None:
        assert server.stop() == 0


def wait_for_count(client, state, count, timeout=10.0):
    """Status is refreshed in the background: wait for it to show `count`."""
    deadline = time.monotonic() + timeout
    while (counts := client.status_counts()[0]).get(state, 0) < count:
        assert time.monotonic() < deadline, counts
        time.sleep(0.05)
    assert counts.get(state) == count, counts


def user():
    return "user-" + uuid.uuid4().hex[:8]


def test_each_device_gets_its_locale(env):
    server, client, record = env
    u = user()
    assert client.register(u, EN_TOKEN, "en_US").created
    assert client.register(u, DE_TOKEN, "de-CH").created
    assert not client.register(u, DE_TOKEN, "de-CH").created  # upsert
    reply = client.schedule(u, "k-locale", priority=client.stubs.types_pb2.PRIORITY_HIGH)
    assert reply.state == client.stubs.types_pb2.MESSAGE_STATE_SCHEDULED
    deliveries = record.wait_for(with_key("k-locale"), count=2)
    by_token = {d["device_token"]: d for d in deliveries}
    assert by_token[EN_TOKEN]["payload"]["aps"]["alert"] == {"title": "Hello", "body": "Body"}
    assert by_token[DE_TOKEN]["payload"]["aps"]["alert"] == {"title": "Hallo", "body": "Body (de)"}
    for d in deliveries:
        assert d["headers"]["apns-topic"] == BUNDLE
        assert d["headers"]["apns-push-type"] == "alert"
        assert d["headers"]["apns-priority"] == "10"
        assert d["headers"][":path"] == f"/3/device/{d['device_token']}"
    wait_for_count(client, "MESSAGE_STATE_SENT", 1)


def test_cancel_before_send_delivers_nothing(env):
    server, client, record = env
    u = user()
    client.register(u, EN_TOKEN, "en")
    client.schedule(u, "k-cancel", after=1.5)
    first = client.cancel(u, "k-cancel")
    assert first.cancelled and first.state == client.stubs.types_pb2.MESSAGE_STATE_CANCELLED
    again = client.cancel(u, "k-cancel")  # idempotent
    assert again.cancelled
    client.schedule(u, "k-after-cancel", after=1.6)  # due later: once it arrives, the cancelled one would have too
    record.wait_for(with_key("k-after-cancel"))
    assert not [d for d in record.lines() if with_key("k-cancel")(d)]


@pytest.mark.parametrize("field,value", [("user_id", "someone-else"), ("campaign_id", "other"), ("platform", 2)])
def test_cancel_needs_every_field_to_match(env, field, value):
    server, client, record = env
    u = user()
    client.schedule(u, "k-match", after=60)
    t, p = client.stubs.types_pb2, client.stubs.push_pb2
    request = p.CancelRequest(bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=u, campaign_id="daily",
                              idempotency_key="k-match")
    setattr(request, field, value)
    with pytest.raises(grpc.RpcError) as err:
        client.push.Cancel(request, timeout=10)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_same_key_twice_only_the_last_arrives(env):
    server, client, record = env
    u = user()
    client.register(u, EN_TOKEN, "en")
    first = client.schedule(u, "k-twice", after=1.5, body="first")
    second = client.schedule(u, "k-twice", after=1.5, body="second")
    assert not first.replaced and second.replaced
    assert second.message_id != first.message_id
    client.schedule(u, "k-twice-sentinel", after=1.7)
    record.wait_for(with_key("k-twice-sentinel"))
    bodies = [d["payload"]["aps"]["alert"]["body"] for d in record.lines() if with_key("k-twice")(d)]
    assert bodies == ["second"]
    with pytest.raises(grpc.RpcError) as err:  # the key is spent: never a second delivery
        client.schedule(u, "k-twice", body="third")
    assert err.value.code() == grpc.StatusCode.ALREADY_EXISTS


def test_context_aware_handoff_then_fallback(env):
    server, client, record = env
    u = user()
    client.register(u, EN_TOKEN, "en")
    reply = client.schedule(u, "k-ca", method="DELIVERY_METHOD_CONTEXT_AWARE", within=2.0)
    assert reply.delivery_method == client.stubs.types_pb2.DELIVERY_METHOD_CONTEXT_AWARE and not reply.ab_test
    handoff = record.wait_for(with_key("k-ca"))[0]
    assert handoff["headers"]["apns-push-type"] == "background"
    assert handoff["headers"]["apns-priority"] == "5"
    assert handoff["payload"]["aps"] == {"content-available": 1}
    assert handoff["payload"]["ctx_aps"]["alert"]["title"] == "Hello"
    assert "ctx_window_end" in handoff["payload"]
    deliveries = record.wait_for(with_key("k-ca"), count=2)
    fallback = deliveries[1]
    assert fallback["headers"]["apns-push-type"] == "alert"
    assert fallback["payload"]["aps"]["alert"]["title"] == "Hello"


def test_handoff_then_displayed_means_no_fallback(env):
    server, client, record = env
    u = user()
    client.register(u, EN_TOKEN, "en")
    client.schedule(u, "k-shown", method="DELIVERY_METHOD_CONTEXT_AWARE", within=1.5)
    record.wait_for(with_key("k-shown"))
    t, p = client.stubs.types_pb2, client.stubs.push_pb2
    reply = client.push.ReportEvent(p.ReportEventRequest(
        bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=u, idempotency_key="k-shown",
        event=p.MESSAGE_EVENT_DISPLAYED, device_token=EN_TOKEN), timeout=10)
    # Reported the moment the push arrived: Herald may still be recording the
    # handoff; either way DISPLAYED wins and the fallback never goes out.
    assert reply.state in (t.MESSAGE_STATE_DISPLAYED, t.MESSAGE_STATE_SCHEDULED, t.MESSAGE_STATE_HANDED_OFF)
    client.schedule(u, "k-shown-sentinel", after=2.0)  # due after the window end
    record.wait_for(with_key("k-shown-sentinel"))
    assert len([d for d in record.lines() if with_key("k-shown")(d)]) == 1
    wait_for_count(client, "MESSAGE_STATE_DISPLAYED", 1)


def test_cancel_after_handoff_sends_a_revoke(env):
    server, client, record = env
    u = user()
    client.register(u, EN_TOKEN, "en")
    client.schedule(u, "k-revoke", method="DELIVERY_METHOD_CONTEXT_AWARE", within=60)
    record.wait_for(with_key("k-revoke"))
    # The simulator records the push before Herald has recorded its answer
    # (until then the message is being sent and cannot be cancelled): wait
    # until Herald shows it handed off.
    t, r = client.stubs.types_pb2, client.stubs.read_pb2
    deadline = time.monotonic() + 10
    while client.push.GetMessage(r.GetMessageRequest(bundle_id=BUNDLE, idempotency_key="k-revoke"),
                                 timeout=10).message.state != t.MESSAGE_STATE_HANDED_OFF:
        assert time.monotonic() < deadline, "the handoff was never recorded"
        time.sleep(0.02)
    assert client.cancel(u, "k-revoke").cancelled
    revoke = record.wait_for(lambda d: d["payload"].get("ctx_revoke") == "k-revoke")[0]
    assert revoke["headers"]["apns-push-type"] == "background"


def test_410_removes_a_device_registered_before_its_timestamp(env):
    server, client, record = env
    u = user()
    gone, kept = "c3" * 32, "d4" * 32  # unregistered an hour from now / in 1970
    client.register(u, gone, "en")
    client.register(u, kept, "en")
    client.register(u, EN_TOKEN, "en")
    client.schedule(u, "k-410")
    record.wait_for(with_key("k-410"))  # the healthy device
    # SENT is recorded only after every device's answer was handled.
    wait_for_count(client, "MESSAGE_STATE_SENT", 1)
    d = client.stubs.device_pb2
    assert not client.devices.UnregisterDevice(d.UnregisterDeviceRequest(bundle_id=BUNDLE, device_token=gone), timeout=10).removed
    assert client.devices.UnregisterDevice(d.UnregisterDeviceRequest(bundle_id=BUNDLE, device_token=kept), timeout=10).removed


def test_no_devices_ends_the_message(env):
    server, client, record = env
    client.schedule(user(), "k-nobody")
    wait_for_count(client, "MESSAGE_STATE_NO_DEVICES", 1)


def test_bad_schedules_name_their_fields(env):
    server, client, record = env
    t, p = client.stubs.types_pb2, client.stubs.push_pb2
    with pytest.raises(grpc.RpcError) as err:
        client.push.Schedule(p.ScheduleRequest(bundle_id=BUNDLE, platform=t.PLATFORM_IOS), timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    for field in ["user_id", "campaign_id", "content", "deliver_within_hours"]:
        assert field in err.value.details(), err.value.details()


@pytest.mark.parametrize("durability", ["full", "process"])
def test_kill_9_after_acknowledged_schedules_delivers_each_exactly_once(stubs, tmp_path, durability):
    record = Record(str(tmp_path / "apns-sim.jsonl"))
    data = str(tmp_path / "data")
    server = start_herald("--grace-seconds", "0", "--sim-record", record.path, "--durability", durability, data_dir=data)
    client = Client(stubs, server.address)
    u = user()
    client.register(u, EN_TOKEN, "en")
    keys = [f"k-crash-{i}" for i in range(50)]
    for key in keys:
        client.schedule(u, key, after=3.0)  # acknowledged = durable
    client.channel.close()
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait()
    assert not record.lines(), "nothing was due before the crash"
    restarted = start_herald("--grace-seconds", "0", "--sim-record", record.path, data_dir=data)
    try:
        record.wait_for(lambda d: d["payload"].get("ctx_idempotency_key", "").startswith("k-crash-"), count=len(keys))
        client = Client(stubs, restarted.address)
        client.schedule(u, "k-crash-sentinel", after=0.5)
        record.wait_for(with_key("k-crash-sentinel"))
        seen = [d["payload"]["ctx_idempotency_key"] for d in record.lines()]
        assert sorted(k for k in seen if k.startswith("k-crash-") and k != "k-crash-sentinel") == sorted(keys)
        client.channel.close()
    finally:
        assert restarted.stop() == 0


def test_a_corrupt_database_is_a_clear_error_and_left_alone(tmp_path):
    from conftest import herald_binary
    import subprocess
    data = tmp_path / "data"
    data.mkdir()
    garbage = os.urandom(8192)
    (data / "herald.sqlite").write_bytes(garbage)
    result = subprocess.run([herald_binary(), "serve", "--port", "0", "--data-dir", str(data)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "herald.sqlite" in result.stderr
    assert (data / "herald.sqlite").read_bytes() == garbage
