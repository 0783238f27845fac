"""The ContextPush web API (SPEC §8) against the real binary: every example
request of the ContextPush "Simple Web Request" document, byte for byte,
through `curl --http1.1` on the gRPC port; the message is stored (GetMessage
over grpcio sees it), the bundled simulator receives the push, and the same
request through grpcio gives an equal stored message. Then hostile HTTP/1.1
through raw sockets, each ending in a clear status with gRPC still served."""
from __future__ import annotations

import datetime as dt
import json
import os
import pathlib
import socket
import subprocess

import grpc
import pytest

from conftest import start_herald
from test_delivery import Record, with_key

EXAMPLES = pathlib.Path(__file__).resolve().parent / "contextpush"
TOKEN = "CTX-123456789ABCD"
BUNDLE = "com.contextsdk.demo"
USER = "user@contextsdk.com"
DEVICE = "e5" * 32


def example(name: str) -> tuple[str, list[tuple[str, str]], bytes]:
    """(path, headers, body) of an example request file, the body's bytes as written."""
    raw = (EXAMPLES / name).read_bytes()
    head, body = raw.split(b"\n\n", 1)
    lines = head.decode().split("\n")
    path = lines[0].split(" ")[1]
    headers = [tuple(part.strip() for part in line.split(":", 1)) for line in lines[1:]]
    return path, headers, body


def curl(port: int, path: str, headers, body: bytes) -> tuple[int, dict]:
    """POSTs `body` as given (`--data-binary`) with curl --http1.1; (status, JSON reply)."""
    cmd = ["curl", "--http1.1", "-sS", "-o", "-", "-w", "\n%{http_code}", "--max-time", "20",
           "-X", "POST", f"http://127.0.0.1:{port}{path}", "--data-binary", "@-"]
    for name, value in headers:
        if name.lower() != "host":  # curl sends its own Host for 127.0.0.1
            cmd += ["-H", f"{name}: {value}"]
    out = subprocess.run(cmd, input=body, capture_output=True, timeout=30, check=True).stdout.decode()
    text, status = out.rsplit("\n", 1)
    return int(status), json.loads(text)


@pytest.fixture
def web(stubs, tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text(f"contextpush {TOKEN} {BUNDLE}\n")
    os.chmod(tokens, 0o600)
    record = Record(str(tmp_path / "sim.jsonl"))
    server = start_herald("--tokens-file", str(tokens), "--grace-seconds", "0", "--sim-record", record.path,
                          data_dir=str(tmp_path / "data"))
    channel = grpc.insecure_channel(server.address)
    push = stubs.push_pb2_grpc.PushServiceStub(channel)
    devices = stubs.device_pb2_grpc.DeviceServiceStub(channel)
    md = [("authorization", f"Token {TOKEN}")]
    t = stubs.types_pb2
    devices.RegisterDevice(stubs.device_pb2.RegisterDeviceRequest(
        bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=USER, device_token=DEVICE, locale="de_DE",
        timezone="Europe/Berlin", environment=t.APNS_ENVIRONMENT_SANDBOX), metadata=md, timeout=10)
    yield server, push, md, record
    channel.close()
    assert server.stop() == 0
    assert not any(TOKEN in line for line in server.stderr_lines), "a token was logged"


def get_message(stubs, push, md, key):
    return push.GetMessage(stubs.read_pb2.GetMessageRequest(bundle_id=BUNDLE, idempotency_key=key),
                           metadata=md, timeout=10).message


def comparable(summary):
    """A stored message's fields that do not depend on when or under which key it was scheduled."""
    return (summary.bundle_id, summary.platform, summary.user_id, summary.campaign_id, summary.delivery_method,
            summary.ab_test)


def alert(delivery):
    payload = dict(delivery["payload"])
    return {k: v for k, v in payload.items() if not k.startswith("ctx_")}


def grpc_schedule_plain(stubs, push, md, key, translated=False):
    t, p = stubs.types_pb2, stubs.push_pb2
    if translated:
        content = t.Content(
            default_locale="en",
            title=t.LocalizedText(translations={"en": "James, it's time for your english course!",
                                                "de": "James, es ist Zeit für deinen Englischkurs!"}),
            body=t.LocalizedText(translations={"en": "Start your english course now!",
                                               "de": "Beginne jetzt mit deinem Englischkurs!"}))
    else:
        content = t.Content(title=t.LocalizedText(text="James, it's time for your english course!"),
                            body=t.LocalizedText(text="Start your english course now!"))
    return push.Schedule(p.ScheduleRequest(
        bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=USER, campaign_id="daily-reminder", idempotency_key=key,
        delivery_method=t.DELIVERY_METHOD_CONTEXT_AWARE, deliver_within_hours=3, content=content),
        metadata=md, timeout=10)


@pytest.mark.parametrize("name,translated", [("schedule-plain.http", False), ("schedule-translated.http", True)])
def test_schedule_examples_byte_for_byte(web, stubs, name, translated):
    server, push, md, record = web
    path, headers, body = example(name)
    status, reply = curl(server.port, path, headers, body)
    assert status == 200, reply
    assert reply["state"] == "scheduled" and reply["delivery_method"] == "context_aware" and not reply["ab_test"]
    key = reply["idempotency_key"]
    stored = get_message(stubs, push, md, key)
    assert stored.message_id == reply["message_id"]
    # The bundled simulator receives it (context-aware: the handoff push first).
    web_push = record.wait_for(with_key(key))[0]
    assert web_push["headers"]["apns-topic"] == BUNDLE
    # The same request through grpcio: an equal stored message and push.
    twin = grpc_schedule_plain(stubs, push, md, key + "-grpc", translated)
    assert comparable(get_message(stubs, push, md, twin.idempotency_key)) == comparable(stored)
    grpc_push = record.wait_for(with_key(twin.idempotency_key))[0]
    assert alert(grpc_push) == alert(web_push)
    assert web_push["headers"]["apns-push-type"] == grpc_push["headers"]["apns-push-type"]


def test_every_other_field_and_the_cancel_example(web, stubs):
    server, push, md, record = web
    path, headers, body = example("schedule-every-field.http")
    target = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = body.replace(b"2099-01-25T18:32:00Z", target.encode())
    status, reply = curl(server.port, path, headers, body)
    assert status == 200, reply
    assert reply["idempotency_key"] == "1234567890abcdef" and reply["delivery_method"] == "traditional"
    delivered = record.wait_for(with_key("1234567890abcdef"))[0]["payload"]
    assert delivered["aps"]["alert"] == {"title": "James, It's time to learn English",
                                         "subtitle": "Start your English course now!",
                                         "body": "It's time to learn English. Start your course now!"}
    assert delivered["aps"]["sound"] == "sosumi.caf" and delivered["aps"]["badge"] == 1
    assert delivered["aps"]["thread-id"] == "english-course" and delivered["key"] == "value"
    assert delivered["ctx_image_url"] == "https://push.contextsdk.com/image.jpg"

    # The cancel example names a key: schedule one with it first (later, so it can still be cancelled).
    later = body.replace(b'"1234567890abcdef"', b'"427c60db-c3df-4098-a0f7-9b5d153438f4"').replace(
        b'"traditional"', b'"context_aware"')
    later = later.replace(target.encode(), (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=100)).strftime(
        "%Y-%m-%dT%H:%M:%SZ").encode())
    assert curl(server.port, path, headers, later)[0] == 200
    cpath, cheaders, cbody = example("cancel.http")
    status, reply = curl(server.port, cpath, cheaders, cbody)
    assert status == 200, reply
    assert reply in ({"cancelled": True, "state": "cancelled"},)
    again = curl(server.port, cpath, cheaders, cbody)
    assert again == (200, {"cancelled": True, "state": "cancelled"})  # idempotent, as over gRPC
    assert get_message(stubs, push, md, "427c60db-c3df-4098-a0f7-9b5d153438f4").state == \
        stubs.types_pb2.MESSAGE_STATE_CANCELLED


def test_errors_are_json_naming_the_field_with_the_matching_status(web):
    server, push, md, record = web
    path, headers, body = example("schedule-plain.http")
    status, reply = curl(server.port, path, headers, body.replace(b'"deliver_within_hours"', b'"deliver_within_hour"'))
    assert status == 400 and reply["error"]["field"] == "deliver_within_hour", reply
    assert "unknown field" in reply["error"]["message"]
    status, reply = curl(server.port, path, headers, body.replace(b'"deliver_within_hours": 3', b'"deliver_within_hours": 500'))
    assert status == 400 and reply["error"]["code"] == "INVALID_ARGUMENT"
    assert reply["error"]["field"] == "deliver_within_hours", reply
    status, reply = curl(server.port, path, [("Authorization", "Token wrong")], body)
    assert status == 401 and reply["error"]["code"] == "UNAUTHENTICATED"
    other = body.replace(BUNDLE.encode(), b"com.other.app")
    status, reply = curl(server.port, path, headers, other)
    assert status == 403 and reply["error"]["code"] == "PERMISSION_DENIED"
    cpath, cheaders, cbody = example("cancel.http")
    status, reply = curl(server.port, cpath, cheaders, cbody.replace(b"427c60db", b"00000000"))
    assert status == 404 and reply["error"]["code"] == "NOT_FOUND"
    # A key scheduled, then scheduled again once sent: ALREADY_EXISTS → 409.
    keyed = body.replace(b'"campaign_id"', b'"idempotency_key": "k-409",\n    "campaign_id"').replace(
        b'"context_aware"', b'"traditional"')
    assert curl(server.port, path, headers, keyed)[0] == 200
    record.wait_for(with_key("k-409"))
    status, reply = curl(server.port, path, headers, keyed)
    assert status == 409 and reply["error"]["code"] == "ALREADY_EXISTS", reply


def raw(port: int, data: bytes) -> bytes:
    """Sends `data` on a fresh connection; everything the server answers until it closes (10 s bound)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        chunks = []
        try:
            while chunk := s.recv(65536):
                chunks.append(chunk)
        except (ConnectionResetError, socket.timeout):
            pass
        return b"".join(chunks)


@pytest.mark.parametrize("request_bytes,status", [
    (b"POST /v1/campaigns/schedule_message_for_user HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", b"400"),
    (b"POST /v1/campaigns/schedule_message_for_user HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
     b"Content-Length: 3\r\n\r\n{}", b"400"),
    (b"POST /v1/campaigns/schedule_message_for_user HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n", b"400"),
    (b"POST /v1/campaigns/schedule_message_for_user HTTP/1.1\r\nHost: x\r\nAuthorization: Token " + TOKEN.encode()
     + b"\r\nContent-Length: 99999999\r\nConnection: close\r\n\r\n", b"413"),
    (b"DELETE /v1/campaigns/cancel_message_for_user HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", b"405"),
    (b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", b"404"),
])
def test_hostile_http1_ends_in_a_clear_status_and_grpc_still_works(web, stubs, request_bytes, status):
    server, push, md, record = web
    answer = raw(server.port, request_bytes)
    assert answer.startswith(b"HTTP/1.1 " + status), answer[:200]
    health = stubs.HealthStub(grpc.insecure_channel(server.address))
    assert health.Check(stubs.health_pb2.HealthCheckRequest(), timeout=10).status == 1


def test_over_tls_alpn_http11_reaches_the_web_api(stubs, tmp_path):
    """With --tls-cert the port still serves both: ALPN http/1.1 → the web API, h2 → gRPC."""
    import ssl
    from test_tls import make_pki, tls_args, tls_client_context
    pki = make_pki(tmp_path / "pki")
    tokens = tmp_path / "tokens"
    tokens.write_text(f"contextpush {TOKEN} {BUNDLE}\n")
    os.chmod(tokens, 0o600)
    server = start_herald(*tls_args(pki), "--tokens-file", str(tokens), data_dir=str(tmp_path / "data"))
    try:
        path, headers, body = example("schedule-plain.http")
        cmd = ["curl", "--http1.1", "-sS", "--cacert", pki["ca_crt"], "-o", "-", "-w", "\n%{http_code}",
               "--max-time", "20", "-X", "POST", f"https://localhost:{server.port}{path}", "--data-binary", "@-"]
        for name, value in headers:
            if name.lower() != "host":
                cmd += ["-H", f"{name}: {value}"]
        out = subprocess.run(cmd, input=body, capture_output=True, timeout=30, check=True).stdout.decode()
        text, status = out.rsplit("\n", 1)
        assert status == "200", text
        assert json.loads(text)["state"] == "scheduled"
        context = tls_client_context(pki["ca_crt"])
        context.set_alpn_protocols(["http/1.1"])
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw_socket:
            with context.wrap_socket(raw_socket, server_hostname="localhost") as tls:
                assert tls.selected_alpn_protocol() == "http/1.1"
                tls.sendall(b"GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
                assert tls.recv(65536).startswith(b"HTTP/1.1 404")
        with grpc.secure_channel(server.address, grpc.ssl_channel_credentials(
                root_certificates=pathlib.Path(pki["ca_crt"]).read_bytes()),
                options=[("grpc.ssl_target_name_override", "localhost")]) as channel:
            health = stubs.HealthStub(channel)
            assert health.Check(stubs.health_pb2.HealthCheckRequest(), timeout=10).status == 1
    finally:
        assert server.stop() == 0


def test_web_calls_are_in_the_access_log_as_their_grpc_method(tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text(f"contextpush {TOKEN} {BUNDLE}\n")
    os.chmod(tokens, 0o600)
    access = tmp_path / "access.log"
    server = start_herald("--tokens-file", str(tokens), "--access-log", str(access), "--log-format", "json",
                          data_dir=str(tmp_path / "data"))
    try:
        path, headers, body = example("schedule-plain.http")
        assert curl(server.port, path, headers, body)[0] == 200
        cpath, cheaders, cbody = example("cancel.http")
        assert curl(server.port, cpath, cheaders, cbody)[0] == 404
    finally:
        assert server.stop() == 0
    records = [json.loads(line) for line in access.read_text().splitlines()]
    assert [(r["method"], r["code"], r["bundle"]) for r in records] == [
        ("herald.v1.PushService/Schedule", "OK", BUNDLE), ("herald.v1.PushService/Cancel", "NOT_FOUND", BUNDLE)]
    assert all(r["peer"].startswith("127.0.0.1:") for r in records)
    assert TOKEN not in access.read_text()
