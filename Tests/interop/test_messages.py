"""The read side through stock grpcio against the real binary: GetMessage,
ListMessages, CampaignReport, and Schedule telling the truth up front.

Hostile requests first, then the happy paths. Every wait is for a condition
(a state GetMessage shows), bounded by a deadline."""
from __future__ import annotations

import datetime as dt
import math
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from conftest import start_herald, write_service_account

BUNDLE = "com.example.app"
OTHER = "com.other.app"
APP_TOKEN = "app-token-0123456789abcdef"
OTHER_TOKEN = "other-token-0123456789abcdef"
TOKENS = f"""\
app    {APP_TOKEN}    {BUNDLE}
other  {OTHER_TOKEN}  {OTHER}
"""
AUTH = [("authorization", f"Token {APP_TOKEN}")]
OTHER_AUTH = [("authorization", f"Token {OTHER_TOKEN}")]
OK_TOKEN, BAD_TOKEN, GONE_TOKEN = "a1" * 32, "b2" * 32, "c3" * 32


def later():
    """A window start never reached during a test (the limit is 168 h ahead)."""
    return (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=100)).isoformat()


class Api:
    def __init__(self, stubs, address, metadata=None):
        self.s = stubs
        self.t, self.p, self.d, self.r = stubs.types_pb2, stubs.push_pb2, stubs.device_pb2, stubs.read_pb2
        self.channel = grpc.insecure_channel(address)
        self.push = stubs.push_pb2_grpc.PushServiceStub(self.channel)
        self.devices = stubs.device_pb2_grpc.DeviceServiceStub(self.channel)
        self.md = metadata

    def register(self, user, token, bundle=BUNDLE):
        t = self.t
        return self.devices.RegisterDevice(self.d.RegisterDeviceRequest(
            bundle_id=bundle, platform=t.PLATFORM_IOS, user_id=user, device_token=token, locale="en",
            timezone="UTC", environment=t.APNS_ENVIRONMENT_SANDBOX), metadata=self.md, timeout=10)

    def schedule_request(self, user, key, *, bundle=BUNDLE, campaign="camp", method=None, platform=None, after=None):
        t = self.t
        request = self.p.ScheduleRequest(
            bundle_id=bundle, platform=platform or t.PLATFORM_IOS, user_id=user, campaign_id=campaign,
            idempotency_key=key, delivery_method=method if method is not None else t.DELIVERY_METHOD_TRADITIONAL,
            deliver_within_hours=1,
            content=t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="There")))
        if after:
            request.deliver_after = after
        return request

    def schedule(self, user, key, **kw):
        return self.push.Schedule(self.schedule_request(user, key, **kw), metadata=self.md, timeout=30)

    def get(self, md=None, **kw):
        return self.push.GetMessage(self.r.GetMessageRequest(**kw), metadata=md or self.md, timeout=10)

    def list(self, md=None, **kw):
        return self.push.ListMessages(self.r.ListMessagesRequest(**kw), metadata=md or self.md, timeout=10)

    def report(self, md=None, **kw):
        return self.push.CampaignReport(self.r.CampaignReportRequest(**kw), metadata=md or self.md, timeout=30)

    def wait_state(self, message_id, states, timeout=30.0):
        names = {self.t.MessageState.Value(s) for s in states}
        deadline = time.monotonic() + timeout
        while True:
            reply = self.get(bundle_id=BUNDLE, message_id=message_id)
            if reply.message.state in names:
                return reply
            assert time.monotonic() < deadline, reply
            time.sleep(0.02)


def code_of(call):
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code(), info.value.details()


@pytest.fixture
def api(stubs, tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKENS)
    os.chmod(tokens, 0o600)
    server = start_herald("--grace-seconds", "0", "--tokens-file", str(tokens),
                          "--sim-bad-token", BAD_TOKEN,
                          "--sim-unregistered", f"{GONE_TOKEN}:{int(time.time() * 1000) + 3_600_000}",
                          data_dir=str(tmp_path / "data"))
    client = Api(stubs, server.address, AUTH)
    yield client
    client.channel.close()
    assert server.stop() == 0


# MARK: hostile

def test_get_message_refuses_bad_requests_and_hides_what_the_token_may_not_see(api):
    reply = api.schedule("u-hostile", "k-hostile", after=None)
    mid = reply.message_id
    cases = [
        (dict(message_id=mid), grpc.StatusCode.INVALID_ARGUMENT, "bundle_id"),
        (dict(bundle_id=BUNDLE), grpc.StatusCode.INVALID_ARGUMENT, "message_id"),
        (dict(bundle_id=BUNDLE, message_id=mid, idempotency_key="k-hostile"), grpc.StatusCode.INVALID_ARGUMENT, "not both"),
        (dict(bundle_id=BUNDLE, message_id="x" * 65), grpc.StatusCode.INVALID_ARGUMENT, "limit is 64"),
        (dict(bundle_id=BUNDLE, message_id=str(uuid.uuid4())), grpc.StatusCode.NOT_FOUND, "no message"),
        (dict(bundle_id=BUNDLE, idempotency_key="never-used"), grpc.StatusCode.NOT_FOUND, "never-used"),
        # The message exists, but in another bundle than the one named.
        (dict(bundle_id=OTHER, message_id=mid), grpc.StatusCode.NOT_FOUND, "no message"),
    ]
    for request, code, text in cases:
        md = OTHER_AUTH if request.get("bundle_id") == OTHER else None
        got, details = code_of(lambda: api.get(md=md, **request))
        assert got == code and text in details, (request, got, details)
    # A token for another bundle sees nothing of this one: NOT_FOUND, never PERMISSION_DENIED.
    for call in (lambda: api.get(md=OTHER_AUTH, bundle_id=BUNDLE, message_id=mid),
                 lambda: api.get(md=OTHER_AUTH, bundle_id=BUNDLE, idempotency_key="k-hostile"),
                 lambda: api.list(md=OTHER_AUTH, bundle_id=BUNDLE, user_id="u-hostile"),
                 lambda: api.report(md=OTHER_AUTH, bundle_id=BUNDLE, campaign_id="camp")):
        assert code_of(call)[0] == grpc.StatusCode.NOT_FOUND
    assert code_of(lambda: api.get(md=[("authorization", "Token nope-nope-nope")], bundle_id=BUNDLE,
                                   message_id=mid))[0] == grpc.StatusCode.UNAUTHENTICATED
    assert api.get(bundle_id=BUNDLE, message_id=mid).message.message_id == mid


def test_list_messages_refuses_bad_page_sizes_and_tokens(api):
    for i in range(3):
        api.schedule("u-page", f"k-page-{i}")
    bad = [
        (dict(user_id="u-page"), "bundle_id"),
        (dict(bundle_id=BUNDLE), "user_id"),
        (dict(bundle_id=BUNDLE, user_id="u-page", page_size=-1), "page_size"),
        (dict(bundle_id=BUNDLE, user_id="u-page", page_size=501), "page_size"),
        (dict(bundle_id=BUNDLE, user_id="u-page", page_size=-2**31), "page_size"),
        (dict(bundle_id=BUNDLE, user_id="u-page", page_token="garbage!"), "page_token"),
        (dict(bundle_id=BUNDLE, user_id="u-page", page_token="ab" * 10), "page_token"),
        (dict(bundle_id=BUNDLE, user_id="u-page", page_token="0" * 100_000), "limit is 256"),
        (dict(bundle_id=BUNDLE, user_id="u-page", states=[0]), "states"),
        (dict(bundle_id=BUNDLE, user_id="u-page", states=[99]), "states"),
    ]
    for request, text in bad:
        code, details = code_of(lambda: api.list(**request))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and text in details, (request, code, details)
    first = api.list(bundle_id=BUNDLE, user_id="u-page", page_size=2)
    assert len(first.messages) == 2 and first.next_page_token
    # A token belongs to its query: another user, campaign or state filter refuses it.
    for other in (dict(user_id="u-other"), dict(user_id="u-page", campaign_id="camp"),
                  dict(user_id="u-page", states=[api.t.MESSAGE_STATE_SCHEDULED])):
        code, details = code_of(lambda: api.list(bundle_id=BUNDLE, page_token=first.next_page_token, **other))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "another query" in details, (other, details)
    # A flipped digit is garbage, or another query: refused either way.
    token = first.next_page_token
    flipped = token[:20] + ("0" if token[20] != "0" else "1") + token[21:]
    assert code_of(lambda: api.list(bundle_id=BUNDLE, user_id="u-page", page_token=flipped))[0] == grpc.StatusCode.INVALID_ARGUMENT
    # page_size 0 means the default (50).
    assert len(api.list(bundle_id=BUNDLE, user_id="u-page").messages) == 3


def test_campaign_report_refuses_bad_requests(api):
    for request, text in [(dict(campaign_id="c"), "bundle_id"), (dict(bundle_id=BUNDLE), "campaign_id"),
                          (dict(bundle_id=BUNDLE, campaign_id="c", created_after="yesterday"), "created_after"),
                          (dict(bundle_id=BUNDLE, campaign_id="c", created_after="2030-01-02T00:00:00Z",
                                created_before="2030-01-01T00:00:00Z"), "created_before")]:
        code, details = code_of(lambda: api.report(**request))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and text in details, (request, details)
    empty = api.report(bundle_id=BUNDLE, campaign_id="nothing-here")
    assert list(empty.cohorts) == [] and not empty.HasField("ab_comparison")


def test_schedule_refuses_what_no_route_could_deliver_and_stores_nothing(stubs, tmp_path):
    key = ec.generate_private_key(ec.SECP256R1())
    p8 = tmp_path / "AuthKey_ROUTEKEY01.p8"
    p8.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()))
    route = f"team=TEAM123456 key-id=ROUTEKEY01 key={p8} bundles=com.example.routed env=sandbox endpoint=127.0.0.1:9"
    # An FCM route for another package only: Android messages of com.example.routed have none.
    account, _ = write_service_account(tmp_path, "other-project")
    fcm_route = f"project=other-project key={account} bundles=com.example.other endpoint=127.0.0.1:9"
    server = start_herald("--apns-route", route, "--fcm-route", fcm_route, data_dir=str(tmp_path / "data"))
    api = Api(stubs, server.address)
    try:
        code, details = code_of(lambda: api.schedule("u1", "k-unrouted", bundle="com.example.unrouted"))
        assert code == grpc.StatusCode.FAILED_PRECONDITION
        assert "com.example.unrouted" in details and "PLATFORM_IOS" in details and "APNs route" in details
        code, details = code_of(lambda: api.schedule("u1", "k-android", bundle="com.example.routed",
                                                     platform=api.t.PLATFORM_ANDROID))
        assert code == grpc.StatusCode.FAILED_PRECONDITION
        assert "com.example.routed" in details and "PLATFORM_ANDROID" in details and "FCM route" in details
        # The package the FCM route serves is accepted on Android.
        reply = api.schedule("u1", "k-android-routed", bundle="com.example.other", platform=api.t.PLATFORM_ANDROID,
                             after=later())
        assert reply.state == api.t.MESSAGE_STATE_SCHEDULED
        for bundle, key_ in (("com.example.unrouted", "k-unrouted"), ("com.example.routed", "k-android")):
            assert code_of(lambda: api.get(bundle_id=bundle, idempotency_key=key_))[0] == grpc.StatusCode.NOT_FOUND
            assert list(api.list(bundle_id=bundle, user_id="u1").messages) == []
        # The routed bundle is accepted; with no device yet it says so.
        reply = api.schedule("u1", "k-routed", bundle="com.example.routed")
        assert any("no registered PLATFORM_IOS device" in w for w in reply.warnings), reply.warnings
        # A production device where only sandbox is routed: accepted, with a warning.
        api.devices.RegisterDevice(api.d.RegisterDeviceRequest(
            bundle_id="com.example.routed", platform=api.t.PLATFORM_IOS, user_id="u2", device_token="d4" * 32,
            locale="en", environment=api.t.APNS_ENVIRONMENT_PRODUCTION), timeout=10)
        reply = api.schedule("u2", "k-prod", bundle="com.example.routed", after=later())
        assert any("serve only sandbox" in w for w in reply.warnings), reply.warnings
    finally:
        api.channel.close()
        assert server.stop() == 0


# MARK: happy paths

def test_get_message_shows_each_device_outcome(api):
    user = "u-three"
    for token in (OK_TOKEN, BAD_TOKEN, GONE_TOKEN):
        api.register(user, token)
    reply = api.schedule(user, "k-three")
    assert list(reply.warnings) == []
    got = api.wait_state(reply.message_id, ["MESSAGE_STATE_SENT"])
    t, names = api.t, api.r
    by_token = {d.device_token: d for d in got.devices}
    assert set(by_token) == {OK_TOKEN, BAD_TOKEN, GONE_TOKEN} and len(got.devices) == 3, got.devices
    ok, bad, gone = by_token[OK_TOKEN], by_token[BAD_TOKEN], by_token[GONE_TOKEN]
    outcome = names.DeviceOutcome
    assert (outcome.Name(ok.outcome), ok.http_status, ok.reason) == ("DEVICE_OUTCOME_SENT", 200, "")
    assert len(ok.apns_id) == 36
    assert (outcome.Name(bad.outcome), bad.http_status, bad.reason) == ("DEVICE_OUTCOME_BAD_DEVICE_TOKEN", 400, "BadDeviceToken")
    assert (outcome.Name(gone.outcome), gone.http_status, gone.reason) == ("DEVICE_OUTCOME_UNREGISTERED", 410, "Unregistered")
    for d in got.devices:
        assert d.platform == t.PLATFORM_IOS and d.environment == t.APNS_ENVIRONMENT_SANDBOX and d.attempts >= 1 and d.at
    m = got.message
    assert (m.message_id, m.idempotency_key, m.bundle_id, m.user_id, m.campaign_id) == (
        reply.message_id, "k-three", BUNDLE, user, "camp")
    assert m.delivery_method == t.DELIVERY_METHOD_TRADITIONAL and not m.ab_test and m.attempts == 1
    events = [names.TimelineEvent.Name(e.event) for e in got.timeline]
    assert events == ["TIMELINE_EVENT_SCHEDULED", "TIMELINE_EVENT_SENT"], got.timeline
    # The same message by its key, and as the newest item of the user's list.
    assert api.get(bundle_id=BUNDLE, idempotency_key="k-three") == got
    listed = api.list(bundle_id=BUNDLE, user_id=user)
    assert [x.message_id for x in listed.messages] == [reply.message_id] and listed.next_page_token == ""
    assert listed.messages[0] == got.message


def test_a_message_with_no_device_says_why(api):
    reply = api.schedule("u-nobody", "k-nobody")
    assert any("no registered PLATFORM_IOS device" in w for w in reply.warnings)
    got = api.wait_state(reply.message_id, ["MESSAGE_STATE_NO_DEVICES"])
    assert "no registered iOS device" in got.message.last_error
    last = got.timeline[-1]
    assert api.r.TimelineEvent.Name(last.event) == "TIMELINE_EVENT_NO_DEVICES" and last.reason == got.message.last_error


def test_list_messages_pages_through_1200_messages_without_duplicate_or_gap(api):
    user = "u-many"
    start = later()  # never due during the test

    def one(i):
        return api.schedule(user, f"k-many-{i:04d}", campaign="many" if i % 3 else "other", after=start).message_id

    with ThreadPoolExecutor(max_workers=16) as pool:
        ids = list(pool.map(one, range(1200)))
    assert len(set(ids)) == 1200
    for page_size, campaign, expected in ((500, "", set(ids)), (7, "", set(ids)),
                                          (250, "many", {m for i, m in enumerate(ids) if i % 3})):
        seen, token, pages, previous = [], "", 0, None
        while True:
            page = api.list(bundle_id=BUNDLE, user_id=user, campaign_id=campaign, page_size=page_size, page_token=token)
            pages += 1
            assert len(page.messages) <= page_size
            for item in page.messages:
                key = (dt.datetime.fromisoformat(item.created_at), item.message_id)
                assert previous is None or key < previous, "not newest first"
                previous = key
                seen.append(item.message_id)
            token = page.next_page_token
            if not token:
                break
            assert len(page.messages) == page_size
        assert len(seen) == len(set(seen)), "duplicate"
        assert set(seen) == expected, "gap"
        assert pages == math.ceil(len(expected) / page_size) or pages == math.ceil(len(expected) / page_size) + 1
    scheduled = api.list(bundle_id=BUNDLE, user_id=user, states=[api.t.MESSAGE_STATE_SCHEDULED], page_size=500)
    assert len(scheduled.messages) == 500
    none = api.list(bundle_id=BUNDLE, user_id=user, states=[api.t.MESSAGE_STATE_SENT])
    assert list(none.messages) == [] and none.next_page_token == ""


def test_campaign_report_counts_an_ab_split_exactly(api):
    t, p = api.t, api.p
    # Users until both cohorts of the split have 4 (the split is a stable hash).
    cohorts = {t.DELIVERY_METHOD_CONTEXT_AWARE: [], t.DELIVERY_METHOD_TRADITIONAL: []}
    n = 0
    while min(len(v) for v in cohorts.values()) < 4:
        user = f"ab-user-{n}"
        token = f"{n:064x}"
        api.register(user, token)
        reply = api.schedule(user, f"k-ab-{n}", campaign="ab", method=t.DELIVERY_METHOD_UNSPECIFIED)
        assert reply.ab_test
        cohorts[reply.delivery_method].append((user, token, reply))
        n += 1
        assert n < 200
    # One message whose method the caller chose, on its own row.
    api.register("chosen-user", "e" * 64)
    chosen = api.schedule("chosen-user", "k-chosen", campaign="ab", method=t.DELIVERY_METHOD_TRADITIONAL)
    for group in cohorts.values():
        for _, _, reply in group:
            api.wait_state(reply.message_id, ["MESSAGE_STATE_HANDED_OFF", "MESSAGE_STATE_SENT"])
    api.wait_state(chosen.message_id, ["MESSAGE_STATE_SENT"])

    def event(user, token, reply, kind):
        api.push.ReportEvent(p.ReportEventRequest(
            bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=user, idempotency_key=reply.idempotency_key,
            event=kind, device_token=token), metadata=api.md, timeout=10)

    ca, tr = cohorts[t.DELIVERY_METHOD_CONTEXT_AWARE], cohorts[t.DELIVERY_METHOD_TRADITIONAL]
    # Context-aware: 3 of its messages displayed, 2 opened; traditional: 2 displayed, 1 opened.
    for i, (user, token, reply) in enumerate(ca):
        if i < 3:
            event(user, token, reply, p.MESSAGE_EVENT_DISPLAYED)
        if i < 2:
            event(user, token, reply, p.MESSAGE_EVENT_OPENED)
    for i, (user, token, reply) in enumerate(tr):
        if i < 2:
            event(user, token, reply, p.MESSAGE_EVENT_DISPLAYED)
        if i < 1:
            event(user, token, reply, p.MESSAGE_EVENT_OPENED)

    report = api.report(bundle_id=BUNDLE, campaign_id="ab")
    rows = {(r.cohort, r.assignment): r for r in report.cohorts}
    assert set(rows) == {(t.DELIVERY_METHOD_CONTEXT_AWARE, api.r.ASSIGNMENT_AB_SPLIT),
                         (t.DELIVERY_METHOD_TRADITIONAL, api.r.ASSIGNMENT_AB_SPLIT),
                         (t.DELIVERY_METHOD_TRADITIONAL, api.r.ASSIGNMENT_CALLER_CHOSEN)}
    nca, ntr = len(ca), len(tr)
    r = rows[(t.DELIVERY_METHOD_CONTEXT_AWARE, api.r.ASSIGNMENT_AB_SPLIT)]
    assert (r.scheduled, r.handed_off, r.sent, r.fallback_sent, r.displayed, r.opened, r.delivered) == (nca, nca, 0, 0, 3, 2, nca)
    assert (r.cancelled, r.failed, r.expired, r.no_devices) == (0, 0, 0, 0)
    assert r.display_rate == pytest.approx(3 / nca) and r.open_rate == pytest.approx(2 / nca)
    r = rows[(t.DELIVERY_METHOD_TRADITIONAL, api.r.ASSIGNMENT_AB_SPLIT)]
    assert (r.scheduled, r.handed_off, r.sent, r.fallback_sent, r.displayed, r.opened, r.delivered) == (ntr, 0, ntr, 0, 2, 1, ntr)
    assert r.display_rate == pytest.approx(2 / ntr) and r.open_rate == pytest.approx(1 / ntr)
    r = rows[(t.DELIVERY_METHOD_TRADITIONAL, api.r.ASSIGNMENT_CALLER_CHOSEN)]
    assert (r.scheduled, r.sent, r.delivered, r.displayed, r.opened) == (1, 1, 1, 0, 0)
    # The A/B comparison covers the split only (the caller-chosen message is left out).
    p1, p2 = 2 / nca, 1 / ntr
    se = math.sqrt(p1 * (1 - p1) / nca + p2 * (1 - p2) / ntr)
    ab = report.ab_comparison
    assert (ab.context_aware_delivered, ab.traditional_delivered) == (nca, ntr)
    assert ab.open_rate_difference == pytest.approx(p1 - p2)
    assert ab.standard_error == pytest.approx(se)
    assert ab.ci95_low == pytest.approx(p1 - p2 - 1.959963984540054 * se)
    assert ab.ci95_high == pytest.approx(p1 - p2 + 1.959963984540054 * se)
    # A time range that ends before the campaign started counts nothing.
    assert list(api.report(bundle_id=BUNDLE, campaign_id="ab", created_before="2000-01-01T00:00:00Z").cohorts) == []
