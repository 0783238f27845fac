"""Android end to end through the real binary and stock grpcio: Schedule →
Herald's FCM client → the FCM simulator (in-process by default, or a
separate `herald fcm-sim` behind an explicit --fcm-route), read back from
the simulators' record (`--sim-record`, lines with "service": "fcm").

Every wait is for an event (a record line, a state), bounded; faults are
injected at start (--fcm-sim-fault), so each fault test has its own Herald."""
from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import time
import uuid

import grpc
import pytest

from conftest import herald_binary, start_herald, write_service_account
from test_delivery import Record

BUNDLE = "com.example.droid"
# Registration tokens look like real ones (~160 characters of letters, digits, ':', '-', '_').
EN = "fcmEn1:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx" + "K3a_9-Zq" * 15
DE = "fcmDe2:APA91bE4rTq9-kLmNoPqRsTuVwXyZ_0123456" + "Lm_7-Xy0" * 15


class Android:
    def __init__(self, stubs, address):
        self.stubs = stubs
        self.t, self.p, self.d, self.r = stubs.types_pb2, stubs.push_pb2, stubs.device_pb2, stubs.read_pb2
        self.channel = grpc.insecure_channel(address)
        self.push = stubs.push_pb2_grpc.PushServiceStub(self.channel)
        self.devices = stubs.device_pb2_grpc.DeviceServiceStub(self.channel)

    def register(self, user, token, locale="en", bundle=BUNDLE):
        return self.devices.RegisterDevice(self.d.RegisterDeviceRequest(
            bundle_id=bundle, platform=self.t.PLATFORM_ANDROID, user_id=user, device_token=token, locale=locale,
            timezone="Europe/Zurich"), timeout=10)

    def content(self, body="Body"):
        return self.t.Content(title=self.t.LocalizedText(translations={"en": "Hello", "de": "Hallo"}),
                              body=self.t.LocalizedText(translations={"en": body, "de": body + " (de)"}),
                              default_locale="en", sound="default", user_info={"order": "A-1", "n": 3})

    def schedule(self, user, key, *, context_aware=False, within=None, bundle=BUNDLE, **extra):
        now = dt.datetime.now(dt.timezone.utc)
        request = self.p.ScheduleRequest(
            bundle_id=bundle, platform=self.t.PLATFORM_ANDROID, user_id=user, campaign_id="droid",
            idempotency_key=key, content=self.content(), priority=self.t.PRIORITY_HIGH, collapse_id="daily",
            delivery_method=self.t.DELIVERY_METHOD_CONTEXT_AWARE if context_aware else self.t.DELIVERY_METHOD_TRADITIONAL,
            **extra)
        if within is None:
            request.deliver_within_hours = 1
        else:
            request.target_delivery_time = (now + dt.timedelta(seconds=within)).isoformat()
        return self.push.Schedule(request, timeout=10)

    def rendered(self, key, locale, token):
        """Render's FCM message for this content, locale and token."""
        reply = self.push.Render(self.p.RenderRequest(
            bundle_id=BUNDLE, platform=self.t.PLATFORM_ANDROID, content=self.content(), priority=self.t.PRIORITY_HIGH,
            collapse_id="daily", idempotency_key=key, locale=locale, device_token=token), timeout=10)
        return json.loads(reply.fcm.message_json)["message"]

    def state(self, key, bundle=BUNDLE):
        reply = self.push.GetMessage(self.r.GetMessageRequest(bundle_id=bundle, idempotency_key=key), timeout=10)
        return self.t.MessageState.Name(reply.message.state), reply

    def wait_state(self, key, state, timeout=30.0, bundle=BUNDLE):
        deadline = time.monotonic() + timeout
        while (current := self.state(key, bundle)[0]) != state:
            assert time.monotonic() < deadline, (key, current)
            time.sleep(0.05)
        return self.state(key, bundle)[1]


def with_key(key):
    return lambda d: d["message"]["data"].get("ctx_idempotency_key") == key


def user():
    return "droid-" + uuid.uuid4().hex[:8]


@pytest.fixture
def run(stubs, tmp_path):
    """Starts Herald (bundled simulators) with extra args; yields (client, record)."""
    started = []

    def start(*args):
        record = Record(str(tmp_path / f"sim-{len(started)}.jsonl"), service="fcm")
        server = start_herald("--grace-seconds", "0", "--sim-record", record.path, *args,
                              data_dir=str(tmp_path / f"data-{len(started)}"))
        client = Android(stubs, server.address)
        started.append((server, client))
        return client, record, server

    yield start
    for server, client in started:
        client.channel.close()
        if server.proc.poll() is None:
            assert server.stop() == 0


# -- hostile first: the provider's refusals and faults --------------------------

def test_unregistered_removes_the_device(run):
    client, record, _ = run("--fcm-sim-unregistered", DE)
    u = user()
    client.register(u, EN, "en")
    client.register(u, DE, "de")
    client.schedule(u, "k-gone")
    (delivered,) = record.wait_for(with_key("k-gone"))
    assert delivered["token"] == EN
    message = client.wait_state("k-gone", "MESSAGE_STATE_SENT")
    outcomes = {o.device_token: o for o in message.devices}
    assert outcomes[DE].http_status == 404 and "UNREGISTERED" in outcomes[DE].reason, outcomes[DE]
    # The registration is gone: unregistering it again removes nothing.
    removed = client.devices.UnregisterDevice(client.d.UnregisterDeviceRequest(bundle_id=BUNDLE, device_token=DE),
                                              timeout=10)
    assert not removed.removed
    assert client.devices.UnregisterDevice(client.d.UnregisterDeviceRequest(bundle_id=BUNDLE, device_token=EN),
                                           timeout=10).removed


def test_429_with_retry_after_is_retried_then_delivered_once(run):
    client, record, _ = run("--fcm-sim-fault", "quota=1:1")
    u = user()
    client.register(u, EN)
    began = time.monotonic()
    client.schedule(u, "k-quota")
    record.wait_for(with_key("k-quota"))
    message = client.wait_state("k-quota", "MESSAGE_STATE_SENT")
    assert time.monotonic() - began >= 1.0  # Retry-After: 1 was honoured
    (outcome,) = message.devices
    assert outcome.attempts == 2, outcome
    assert len([d for d in record.lines() if with_key("k-quota")(d)]) == 1


def test_503_is_retried(run):
    client, record, _ = run("--fcm-sim-fault", "unavailable=0:2")
    u = user()
    client.register(u, EN)
    client.schedule(u, "k-503")
    record.wait_for(with_key("k-503"))
    (outcome,) = client.wait_state("k-503", "MESSAGE_STATE_SENT").devices
    assert outcome.attempts == 3, outcome
    assert len([d for d in record.lines() if with_key("k-503")(d)]) == 1


def test_android_without_an_fcm_route_for_the_bundle_is_refused(stubs, tmp_path):
    account, _ = write_service_account(tmp_path, "other-project")
    server = start_herald("--fcm-route", f"project=other-project key={account} bundles=com.example.other endpoint=127.0.0.1:9",
                          data_dir=str(tmp_path / "data"))
    client = Android(stubs, server.address)
    try:
        with pytest.raises(grpc.RpcError) as refused:
            client.schedule(user(), "k-unrouted")
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "no FCM route" in refused.value.details() and BUNDLE in refused.value.details()
    finally:
        client.channel.close()
        assert server.stop() == 0


def test_android_tokens_are_validated_at_register(run):
    client, _, _ = run()
    for bad in ["", "has space", "dot.token", "x" * 4097, "ümlaut"]:
        with pytest.raises(grpc.RpcError) as refused:
            client.register(user(), bad)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "device_token" in refused.value.details()


# -- delivery ------------------------------------------------------------------

def test_each_android_device_gets_the_rendered_message_in_its_locale(run):
    client, record, _ = run()
    u = user()
    assert client.register(u, EN, "en_US").created
    assert client.register(u, DE, "de-CH").created
    reply = client.schedule(u, "k-locale")
    assert reply.state == client.t.MESSAGE_STATE_SCHEDULED
    deliveries = record.wait_for(with_key("k-locale"), count=2)
    by_token = {d["token"]: d for d in deliveries}
    assert by_token[EN]["message"] == client.rendered("k-locale", "en_US", EN)
    assert by_token[DE]["message"] == client.rendered("k-locale", "de-CH", DE)
    assert by_token[DE]["message"]["notification"] == {"title": "Hallo", "body": "Body (de)"}
    assert by_token[EN]["message"]["android"]["priority"] == "HIGH"
    assert by_token[EN]["message"]["android"]["collapse_key"] == "daily"
    assert by_token[EN]["message"]["data"]["n"] == "3"  # data values are strings
    assert {d["project"] for d in deliveries} == {"herald-sim"}
    message = client.wait_state("k-locale", "MESSAGE_STATE_SENT")
    assert {client.r.DeviceOutcome.Name(o.outcome) for o in message.devices} == {"DEVICE_OUTCOME_SENT"}, message.devices


def test_context_aware_handoff_is_data_only_then_the_fallback_is_the_alert(run):
    client, record, _ = run()
    u = user()
    client.register(u, DE, "de")
    client.schedule(u, "k-ctx", context_aware=True, within=1.5)
    handoff, fallback = record.wait_for(with_key("k-ctx"), count=2)
    message = handoff["message"]
    assert "notification" not in message
    assert message["android"]["priority"] == "HIGH" and "collapse_key" not in message["android"]
    data = message["data"]
    assert all(isinstance(v, str) for v in data.values())
    assert json.loads(data["ctx_notification"]) == {"title": "Hallo", "body": "Body (de)", "sound": "default"}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", data["ctx_window_end"])
    assert data["order"] == "A-1"
    assert fallback["message"] == client.rendered("k-ctx", "de", DE)
    client.wait_state("k-ctx", "MESSAGE_STATE_SENT")


def test_cancel_after_handoff_sends_a_data_only_revoke(run):
    client, record, _ = run()
    u = user()
    client.register(u, EN)
    client.schedule(u, "k-revoke", context_aware=True, within=60)
    record.wait_for(with_key("k-revoke"))
    client.wait_state("k-revoke", "MESSAGE_STATE_HANDED_OFF")
    assert client.push.Cancel(client.p.CancelRequest(
        bundle_id=BUNDLE, platform=client.t.PLATFORM_ANDROID, user_id=u, campaign_id="droid",
        idempotency_key="k-revoke"), timeout=10).cancelled
    (revoke,) = record.wait_for(lambda d: d["message"]["data"].get("ctx_revoke") == "k-revoke")
    assert revoke["token"] == EN
    assert set(revoke["message"]) == {"token", "data", "android"}
    assert revoke["message"]["data"] == {"ctx_revoke": "k-revoke"}
    assert revoke["message"]["android"]["priority"] == "HIGH"


def test_mixed_users_get_both_platforms(run):
    client, record, _ = run()
    apns = Record(record.path, service="apns")
    u = user()
    client.register(u, EN)
    client.devices.RegisterDevice(client.d.RegisterDeviceRequest(
        bundle_id=BUNDLE, platform=client.t.PLATFORM_IOS, user_id=u, device_token="a1" * 32, locale="en"), timeout=10)
    client.schedule(u, "k-mixed-a")
    client.push.Schedule(client.p.ScheduleRequest(
        bundle_id=BUNDLE, platform=client.t.PLATFORM_IOS, user_id=u, campaign_id="droid", idempotency_key="k-mixed-i",
        content=client.content(), deliver_within_hours=1), timeout=10)
    record.wait_for(with_key("k-mixed-a"))
    (ios,) = apns.wait_for(lambda d: d["payload"].get("ctx_idempotency_key") == "k-mixed-i")
    assert ios["service"] == "apns" and ios["device_token"] == "a1" * 32


def test_get_message_gives_each_devices_provider_message_id(run):
    """SPEC §3: provider_message_id is the FCM message name for an Android
    device and the apns-id for an iOS one; apns_id stays APNs only."""
    client, record, _ = run()
    apns = Record(record.path, service="apns")
    u = user()
    client.register(u, EN)
    client.devices.RegisterDevice(client.d.RegisterDeviceRequest(
        bundle_id=BUNDLE, platform=client.t.PLATFORM_IOS, user_id=u, device_token="a2" * 32, locale="en"), timeout=10)
    client.schedule(u, "k-pmid-a")
    client.push.Schedule(client.p.ScheduleRequest(
        bundle_id=BUNDLE, platform=client.t.PLATFORM_IOS, user_id=u, campaign_id="droid", idempotency_key="k-pmid-i",
        content=client.content(), deliver_within_hours=1, delivery_method=client.t.DELIVERY_METHOD_TRADITIONAL),
        timeout=10)
    (fcm,) = record.wait_for(with_key("k-pmid-a"))
    (ios,) = apns.wait_for(lambda d: d["payload"].get("ctx_idempotency_key") == "k-pmid-i")
    (android,) = client.wait_state("k-pmid-a", "MESSAGE_STATE_SENT").devices
    assert re.fullmatch(r"projects/herald-sim/messages/.+", android.provider_message_id), android
    assert android.provider_message_id == fcm["name"]
    assert android.apns_id == ""
    (iphone,) = client.wait_state("k-pmid-i", "MESSAGE_STATE_SENT").devices
    assert len(iphone.apns_id) == 36 and iphone.apns_id == ios["apns_id"]
    assert iphone.provider_message_id == iphone.apns_id


def test_status_reports_the_fcm_pool(run):
    client, record, _ = run()
    u = user()
    client.register(u, EN)
    client.schedule(u, "k-status")
    record.wait_for(with_key("k-status"))
    deadline = time.monotonic() + 10
    while True:
        status = client.push.Status(client.p.StatusRequest(), timeout=10)
        pools = list(status.fcm_pools)
        if pools and pools[0].access_tokens_minted >= 1:
            break
        assert time.monotonic() < deadline, status
        time.sleep(0.05)
    (pool,) = pools
    assert pool.project == "herald-sim" and pool.route == "bundled FCM simulator"
    assert pool.endpoint.startswith("127.0.0.1:")
    assert EN not in str(status)  # never a token


# -- an explicit route to a separately started `herald fcm-sim` -----------------

def start_fcm_sim(tmp_path, public_key_pem, project, *extra):
    pub = tmp_path / "sa-public.pem"
    pub.write_bytes(public_key_pem)
    record = tmp_path / "fcm-sim.jsonl"
    ca = tmp_path / "fcm-ca.pem"
    proc = subprocess.Popen(
        [herald_binary(), "fcm-sim", "--port", "0", "--ca-out", str(ca), "--record", str(record),
         "--account", f"project={project} email=herald@{project}.iam.gserviceaccount.com kid=kid-{project} public-key={pub}",
         *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = [proc.stdout.readline() for _ in range(3)]
    port = int(re.search(r"listening on [\d.]+:(\d+)", lines[0]).group(1))
    token_url = next(line.split(" ", 1)[1].strip() for line in lines if line.startswith("token-url "))
    return proc, port, str(ca), token_url, Record(str(record), service="fcm")


def test_an_explicit_fcm_route_to_a_separate_simulator(stubs, tmp_path):
    from cryptography.hazmat.primitives import serialization

    account, key = write_service_account(tmp_path, "droid-prod")
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    sim, port, ca, token_url, record = start_fcm_sim(tmp_path, public, "droid-prod")
    server = None
    try:
        route = f"project=droid-prod key={account} bundles={BUNDLE} endpoint=127.0.0.1:{port} token-url={token_url} ca={ca}"
        server = start_herald("--grace-seconds", "0", "--fcm-route", route, data_dir=str(tmp_path / "data"))
        client = Android(stubs, server.address)
        u = user()
        client.register(u, EN, "en")
        client.schedule(u, "k-routed")
        (delivered,) = record.wait_for(with_key("k-routed"))
        assert delivered["project"] == "droid-prod" and delivered["token"] == EN
        assert delivered["message"] == client.rendered("k-routed", "en", EN)
        client.wait_state("k-routed", "MESSAGE_STATE_SENT")
        client.channel.close()
    finally:
        if server is not None:
            assert server.stop() == 0
        sim.terminate()
        sim.wait(timeout=30)


def test_a_bad_service_account_key_stops_start_up_naming_the_route(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"project_id": "p", "client_email": "a@b", "private_key": "not a key"}')
    proc = subprocess.run(
        [herald_binary(), "serve", "--check-config", "--data-dir", str(tmp_path / "data"),
         "--fcm-route", f"project=droid-prod key={bad} bundles={BUNDLE}"],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "--fcm-route #1" in proc.stderr and "project=droid-prod" in proc.stderr and str(bad) in proc.stderr, proc.stderr


def test_sighup_reloads_the_fcm_routes_file(stubs, tmp_path):
    """A routes file naming one package; SIGHUP with a second route: Schedule
    for the new package is accepted from then on; a broken file keeps them."""
    from test_reload import reload

    account, _ = write_service_account(tmp_path, "droid-prod")
    routes = tmp_path / "fcm-routes"
    routes.write_text(f"project=droid-prod key={account} bundles=com.example.one endpoint=127.0.0.1:9\n")
    server = start_herald("--fcm-routes-file", str(routes), data_dir=str(tmp_path / "data"))
    client = Android(stubs, server.address)
    later = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=2)).isoformat()
    try:
        with pytest.raises(grpc.RpcError) as refused:
            client.schedule(user(), "k-two-before", bundle="com.example.two")
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        routes.write_text(routes.read_text()
                          + f"project=droid-prod key={account} bundles=com.example.two endpoint=127.0.0.1:9\n")
        line = reload(server)
        assert 'fcm_routes_added="project=droid-prod bundles=com.example.two"' in line, line
        client.schedule(user(), "k-two-after", bundle="com.example.two", deliver_after=later)
        routes.write_text("project=droid-prod key=/nonexistent/sa.json\n")
        assert "/nonexistent/sa.json" in reload(server, "reload failed")
        client.schedule(user(), "k-two-still", bundle="com.example.two", deliver_after=later)
    finally:
        client.channel.close()
        assert server.stop() == 0


def test_refused_credentials_are_operator_visible(run):
    """The token endpoint refuses the service account (invalid_grant): the
    message fails, Status names the pool's error and counts it."""
    client, record, _ = run("--fcm-sim-fault", "invalid-grant:1000")
    u = user()
    client.register(u, EN)
    client.schedule(u, "k-denied", ttl_seconds=0)
    client.wait_state("k-denied", "MESSAGE_STATE_FAILED")
    deadline = time.monotonic() + 10
    while not (pools := list(client.push.Status(client.p.StatusRequest(), timeout=10).fcm_pools))[0].auth_failures:
        assert time.monotonic() < deadline, pools
        time.sleep(0.05)
    assert pools[0].last_error and pools[0].last_error_at
    assert [r.reason for r in pools[0].auth_failure_reasons] == ["TOKEN_ENDPOINT"]
    assert record.lines() == []


def test_third_party_auth_error_fails_and_is_operator_visible(run):
    """FCM refuses the project's APNs/web-push credentials (401
    THIRD_PARTY_AUTH_ERROR): final, no retry, the message FAILED with the
    code, and Status counts it as an auth failure of the pool."""
    client, record, _ = run("--fcm-sim-fault", "third-party-auth:1")
    u = user()
    client.register(u, EN)
    client.schedule(u, "k-3p")
    message = client.wait_state("k-3p", "MESSAGE_STATE_FAILED")
    (outcome,) = message.devices
    assert outcome.http_status == 401 and "THIRD_PARTY_AUTH_ERROR" in outcome.reason, outcome
    assert outcome.attempts == 1, outcome
    assert "THIRD_PARTY_AUTH_ERROR" in message.message.last_error, message.message
    deadline = time.monotonic() + 10
    while not (pools := list(client.push.Status(client.p.StatusRequest(), timeout=10).fcm_pools))[0].auth_failures:
        assert time.monotonic() < deadline, pools
        time.sleep(0.05)
    assert [r.reason for r in pools[0].auth_failure_reasons] == ["THIRD_PARTY_AUTH_ERROR"]
    assert "THIRD_PARTY_AUTH_ERROR" in pools[0].last_error
    assert record.lines() == []


@pytest.mark.parametrize("source, expected", [
    ("file", "herald.conf:2: fcm-route"),
    ("env-rate", "HERALD_FCM_RATE_PER_MINUTE: must be an integer"),
    ("flag-rate", "--fcm-rate-per-minute: must be 1...100000000"),
    ("flag", "--fcm-route #1: unknown key \"team\""),
    ("file-ok", None),
])
def test_fcm_settings_are_strict_in_every_layer(tmp_path, source, expected):
    import os

    account, _ = write_service_account(tmp_path, "droid-prod")
    conf = tmp_path / "herald.conf"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}
    args = [herald_binary(), "serve", "--check-config", "--data-dir", str(tmp_path / "data"), "--config", str(conf)]
    good = f"project=droid-prod key={account} bundles={BUNDLE}"
    conf.write_text("# FCM\n" + (f"fcm-route = project=droid-prod key={account} colour=blue\n" if source == "file"
                                 else f"fcm-route = {good}\nfcm-rate-per-minute = 1000\n"))
    if source == "env-rate":
        env["HERALD_FCM_RATE_PER_MINUTE"] = "lots"
    if source == "flag-rate":
        args += ["--fcm-rate-per-minute", "0"]
    if source == "flag":
        args += ["--fcm-route", "project=p key=/k team=T"]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=60, env=env)
    if expected is None:
        assert proc.returncode == 0 and "configuration OK" in proc.stdout, proc.stderr
    else:
        assert proc.returncode != 0 and expected in proc.stderr, proc.stderr


def test_readme_android_alert_is_what_render_returns(run):
    """docs/APP-CONTRACT.md's Android alert (app-side contract) is Render's FCM message."""
    from test_docs import app_section

    client, _, _ = run()
    alert = re.findall(r"```jsonc\n(.*?)\n```", app_section(), re.S)[0]
    t = client.t
    reply = client.push.Render(client.p.RenderRequest(
        bundle_id="com.example.shop", platform=t.PLATFORM_ANDROID, idempotency_key="order-A-10023-shipped",
        device_token=EN,
        content=t.Content(title=t.LocalizedText(text="Your order has shipped"),
                          body=t.LocalizedText(text="Arriving Thursday"), sound="default",
                          image_url="https://cdn.example.com/a10023.jpg", user_info={"order_id": "A-10023"})), timeout=10)
    assert json.loads(reply.fcm.message_json) == json.loads(alert.replace("<registration token>", EN))
