"""Connect protocol unary (SPEC §8, connectrpc.com/docs/protocol) against the
real binary on the gRPC port: every unary RPC through `curl --http1.1` and
`curl --http2-prior-knowledge`, JSON and proto codecs; a Connect client
nobody here wrote (connect-python, its low-level client with grpcio-tools'
generated messages); the ContextPush web example, the same Schedule as
Connect JSON and as grpcio give equal stored messages; hostile requests,
each ending in a clear Connect error with the server still healthy."""
from __future__ import annotations

import json
import subprocess

import pytest

from test_web_api import BUNDLE, DEVICE, TOKEN, USER, comparable, curl as web_curl, example, get_message, web  # noqa: F401

AUTH = ("authorization", f"Token {TOKEN}")
VERSIONS = ["--http1.1", "--http2-prior-knowledge"]


def connect(port, method, body, *, version="--http1.1", content_type="application/json", headers=(AUTH,),
            service="herald.v1.PushService"):
    """POSTs `body` (dict → JSON, bytes as they are) to a Connect method; (status, content type, body bytes)."""
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    cmd = ["curl", version, "-sS", "-o", "-", "-w", "\n%{http_code} %{content_type}", "--max-time", "20",
           "-X", "POST", f"http://127.0.0.1:{port}/{service}/{method}", "--data-binary", "@-"]
    if content_type is not None:
        cmd += ["-H", f"content-type: {content_type}"]
    for name, value in headers:
        cmd += ["-H", f"{name}: {value}"]
    out = subprocess.run(cmd, input=data, capture_output=True, timeout=30, check=True).stdout
    text, tail = out.rsplit(b"\n", 1)
    status, _, ctype = tail.decode().partition(" ")
    return int(status), ctype, text


def cjson(port, method, body, **kw):
    status, ctype, text = connect(port, method, body, **kw)
    return status, json.loads(text) if text else None


def healthy(port, version="--http1.1"):
    assert cjson(port, "Check", {}, version=version, service="grpc.health.v1.Health", headers=()) == \
        (200, {"status": "SERVING"})


def schedule_body(key):
    return {"bundleId": BUNDLE, "platform": "PLATFORM_IOS", "userId": USER, "campaignId": "daily-reminder",
            "idempotencyKey": key, "deliveryMethod": "DELIVERY_METHOD_CONTEXT_AWARE", "deliverWithinHours": 3,
            "content": {"title": {"text": "James, it's time for your english course!"},
                        "body": {"text": "Start your english course now!"}}}


@pytest.mark.parametrize("version", VERSIONS)
def test_every_unary_rpc_as_connect_json(web, version):
    server, push, md, record = web
    port = server.port
    healthy(port, version)
    v = version[2:6]
    status, reply = cjson(port, "RegisterDevice", {
        "bundleId": BUNDLE, "platform": "PLATFORM_IOS", "userId": "u-" + v, "deviceToken": "ab" * 32,
        "locale": "en_US", "timezone": "Europe/Berlin", "environment": "APNS_ENVIRONMENT_SANDBOX"},
        version=version, service="herald.v1.DeviceService")
    assert status == 200 and reply == {"created": True}, reply
    status, reply = cjson(port, "Schedule", schedule_body("c-" + v), version=version)
    assert status == 200 and reply["state"] == "MESSAGE_STATE_SCHEDULED" and reply["idempotencyKey"] == "c-" + v, reply
    status, reply = cjson(port, "GetMessage", {"bundle_id": BUNDLE, "idempotencyKey": "c-" + v}, version=version)
    assert status == 200 and reply["message"]["campaignId"] == "daily-reminder", reply
    status, reply = cjson(port, "ListMessages", {"bundleId": BUNDLE, "userId": USER}, version=version)
    assert status == 200 and any(m["idempotencyKey"] == "c-" + v for m in reply["messages"]), reply
    status, reply = cjson(port, "CampaignReport", {"bundleId": BUNDLE, "campaignId": "daily-reminder"}, version=version)
    assert status == 200, reply
    status, reply = cjson(port, "Render", {"bundleId": BUNDLE, "platform": "PLATFORM_IOS",
                                            "content": {"title": {"text": "T"}, "body": {"text": "B"}}}, version=version)
    assert status == 200, reply
    status, reply = cjson(port, "ReportEvent", {"bundleId": BUNDLE, "platform": "PLATFORM_IOS", "userId": USER,
                                                 "idempotencyKey": "c-" + v, "event": "MESSAGE_EVENT_OPENED"},
                          version=version)
    assert status in (200, 400, 404, 412) and (status == 200 or reply["code"]), reply  # its own rules decide
    status, reply = cjson(port, "Status", {}, version=version)
    assert status == 200 and reply["serving"] == "SERVING_STATE_SERVING", reply
    status, reply = cjson(port, "Cancel", {"bundleId": BUNDLE, "platform": "PLATFORM_IOS", "userId": USER,
                                            "campaignId": "daily-reminder", "idempotencyKey": "c-" + v}, version=version)
    assert status == 200 and reply["cancelled"] is True, reply
    status, reply = cjson(port, "UnregisterDevice", {"bundleId": BUNDLE, "deviceToken": "ab" * 32},
                          version=version, service="herald.v1.DeviceService")
    assert status == 200, reply
    healthy(port, version)


@pytest.mark.parametrize("version", VERSIONS)
def test_proto_codec(web, stubs, version):
    server, push, md, record = web
    p, t = stubs.push_pb2, stubs.types_pb2
    key = "p-" + version[2:6]
    request = p.ScheduleRequest(
        bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=USER, campaign_id="daily-reminder", idempotency_key=key,
        delivery_method=t.DELIVERY_METHOD_CONTEXT_AWARE, deliver_within_hours=3,
        content=t.Content(title=t.LocalizedText(text="T"), body=t.LocalizedText(text="B")))
    status, ctype, body = connect(server.port, "Schedule", request.SerializeToString(), version=version,
                                  content_type="application/proto")
    assert status == 200 and ctype == "application/proto", body
    assert p.ScheduleResponse.FromString(body).idempotency_key == key
    read = stubs.read_pb2.GetMessageRequest(bundle_id=BUNDLE, idempotency_key=key)
    status, ctype, body = connect(server.port, "GetMessage", read.SerializeToString(), version=version,
                                  content_type="application/proto")
    assert status == 200 and stubs.read_pb2.GetMessageResponse.FromString(body).message.idempotency_key == key
    status, ctype, body = connect(server.port, "Check", stubs.health_pb2.HealthCheckRequest().SerializeToString(),
                                  version=version, content_type="application/proto", headers=(),
                                  service="grpc.health.v1.Health")
    assert status == 200 and stubs.health_pb2.HealthCheckResponse.FromString(body).status == 1


def test_web_example_connect_json_and_grpcio_store_equal_messages(web, stubs):
    server, push, md, record = web
    path, headers, body = example("schedule-plain.http")
    status, reply = web_curl(server.port, path, headers, body)
    assert status == 200, reply
    from_web = get_message(stubs, push, md, reply["idempotency_key"])
    status, reply = cjson(server.port, "Schedule", schedule_body("eq-connect"), version="--http2-prior-knowledge")
    assert status == 200, reply
    from_connect = get_message(stubs, push, md, "eq-connect")
    from test_web_api import grpc_schedule_plain
    twin = grpc_schedule_plain(stubs, push, md, "eq-grpc")
    from_grpc = get_message(stubs, push, md, twin.idempotency_key)
    assert comparable(from_web) == comparable(from_connect) == comparable(from_grpc)
    # Field by field, but for the key, the id, the times and what delivery progress changes.
    fields = lambda m: {f.name: v for f, v in m.ListFields()  # noqa: E731
                        if f.name not in ("message_id", "idempotency_key", "window_start", "window_end", "ab_test",
                                          "delivery_method", "state", "attempts") and not f.name.endswith("_at")}
    assert fields(from_connect) == fields(from_grpc) == fields(from_web)


def test_connect_python_client(web, stubs):
    """connect-python (PyPI, not written here): its Connect client, JSON and proto, gzip as it sends by default."""
    from connectrpc.client import ConnectClientSync
    from connectrpc.errors import ConnectError
    from connectrpc.method import IdempotencyLevel, MethodInfo

    server, push, md, record = web
    p, t = stubs.push_pb2, stubs.types_pb2

    def method(name, req, res, service="herald.v1.PushService"):
        return MethodInfo(name=name, service_name=service, input=req, output=res,
                          idempotency_level=IdempotencyLevel.UNKNOWN)

    schedule = method("Schedule", p.ScheduleRequest, p.ScheduleResponse)
    headers = {"authorization": f"Token {TOKEN}"}
    for proto_json in (False, True):
        key = f"py-{proto_json}"
        with ConnectClientSync(f"http://127.0.0.1:{server.port}", proto_json=proto_json) as client:
            reply = client.execute_unary(request=p.ScheduleRequest(
                bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=USER, campaign_id="c", idempotency_key=key,
                delivery_method=t.DELIVERY_METHOD_TRADITIONAL, deliver_within_hours=2,
                content=t.Content(title=t.LocalizedText(text="T" * 2000), body=t.LocalizedText(text="B"))),
                method=schedule, headers=headers)
            assert reply.idempotency_key == key and reply.state == t.MESSAGE_STATE_SCHEDULED
            with pytest.raises(ConnectError) as refused:
                client.execute_unary(request=p.ScheduleRequest(bundle_id=BUNDLE), method=schedule, headers=headers)
            assert refused.value.code.name.lower() == "invalid_argument"
            with pytest.raises(ConnectError) as unauthenticated:
                client.execute_unary(request=p.ScheduleRequest(bundle_id=BUNDLE), method=schedule)
            assert unauthenticated.value.code.name.lower() == "unauthenticated"
        assert get_message(stubs, push, md, key).campaign_id == "c"


@pytest.mark.parametrize("version", VERSIONS)
def test_hostile_connect_requests(web, version):
    server, push, md, record = web
    port = server.port
    cases = [
        (dict(body=b"{not json"), 400, "invalid_argument"),
        (dict(body={"bundleId": BUNDLE, "bundelId": "x"}), 400, "invalid_argument"),
        (dict(body={"bundleId": 5}), 400, "invalid_argument"),
        (dict(body={"bundleId": BUNDLE, "pageSize": "99999999999"}), 400, "invalid_argument"),
        (dict(body=b'{"bundleId": "a", "bundleId": "b"}'), 400, "invalid_argument"),
        (dict(body=b'{"bundleId": "a\\u0000"}'), 400, "invalid_argument"),
        (dict(body=b"[" * 100 + b"]" * 100), 400, "invalid_argument"),
        (dict(body={"bundleId": BUNDLE}, headers=(AUTH, ("connect-protocol-version", "2"))), 400, "invalid_argument"),
        (dict(body={"bundleId": BUNDLE}, headers=(AUTH, ("connect-timeout-ms", "soon"))), 400, "invalid_argument"),
        (dict(body={"bundleId": BUNDLE}, headers=(AUTH, ("connect-timeout-ms", "99999999999"))), 400, "invalid_argument"),
        (dict(body={"bundleId": BUNDLE}, headers=(AUTH, ("connect-timeout-ms", "0"))), 504, "deadline_exceeded"),
        (dict(body={"bundleId": BUNDLE}, headers=(AUTH, ("content-encoding", "br"))), 501, "unimplemented"),
        (dict(body={"bundleId": BUNDLE}, headers=()), 401, "unauthenticated"),
        (dict(body={"bundleId": BUNDLE}, headers=(("authorization", "Token wrong"),)), 401, "unauthenticated"),
        (dict(body={"bundleId": "com.other.app", "userId": USER}, headers=(AUTH,)), 404, "not_found"),
        (dict(body={"bundleId": BUNDLE}, content_type="text/plain"), 415, None),
        (dict(body=b"x" * (5 * 1024 * 1024)), 429, "resource_exhausted"),
    ]
    for kw, status, code in cases:
        got, ctype, text = connect(port, "ListMessages", version=version, **kw)
        assert got == status, (kw.get("headers"), text[:200])
        if code:
            assert json.loads(text)["code"] == code, text[:200]
            assert json.loads(text)["message"]
        healthy(port, version)
    status, reply = cjson(port, "StreamEvents", {"bundleId": BUNDLE}, version=version)
    assert status == 501 and reply["code"] == "unimplemented" and "streaming" in reply["message"]
    status, reply = cjson(port, "Watch", {}, version=version, service="grpc.health.v1.Health", headers=())
    assert status == 501 and reply["code"] == "unimplemented"
    status, reply = cjson(port, "NoSuchMethod", {}, version=version)
    assert status == 404
    healthy(port, version)


@pytest.mark.parametrize("version", VERSIONS)
def test_methods_callable_without_a_token_keep_their_smaller_body_limit(web, version):
    """Health/Check takes no token: over Connect, as over gRPC, its body is bounded at 64 KiB."""
    server, push, md, record = web
    big = b'{"service": "' + b"x" * (100 * 1024) + b'"}'
    status, ctype, text = connect(server.port, "Check", big, version=version, headers=(), service="grpc.health.v1.Health")
    assert status == 429 and json.loads(text)["code"] == "resource_exhausted", text[:200]
    healthy(server.port, version)
