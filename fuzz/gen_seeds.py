#!/usr/bin/env python3
"""Writes the seed corpora under fuzz/corpus/<target>/ (committed; rerun after
changing Protos/ or the input layouts in fuzz/Sources/HeraldFuzz).

Needs grpcio-tools and protobuf (the test venv: .venv/bin/python fuzz/gen_seeds.py).
Seeds are named by what they exercise, so reruns overwrite rather than pile up.
"""
from __future__ import annotations

import atexit
import gzip
import importlib
import json
import pathlib
import shutil
import struct
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
CORPUS = ROOT / "fuzz" / "corpus"

# The selector byte of the `requests` target (RequestsTarget.RPC).
(SCHEDULE, CANCEL, RENDER, REGISTER, UNREGISTER, REPORT, STATUS, HEALTH_CHECK, HEALTH_WATCH, REFLECTION_V1,
 REFLECTION_V1ALPHA, GET_MESSAGE, LIST_MESSAGES, CAMPAIGN_REPORT, STREAM_EVENTS) = range(15)


def field(number: int, value: bytes | int) -> bytes:
    """One protobuf field: a varint for an int, length-delimited for bytes."""
    def varint(v: int) -> bytes:
        out = bytearray()
        while v >= 0x80:
            out.append(v & 0x7F | 0x80)
            v >>= 7
        out.append(v)
        return bytes(out)
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    return varint(number << 3 | 2) + varint(len(value)) + value


def stubs():
    from grpc_tools import protoc

    out = pathlib.Path(tempfile.mkdtemp(prefix="herald-fuzz-stubs-"))
    atexit.register(shutil.rmtree, out, True)  # the modules are loaded by then
    include = pathlib.Path(protoc.__file__).parent / "_proto"
    protos = [str(p.relative_to(ROOT / "Protos")) for p in (ROOT / "Protos" / "herald" / "v1").glob("*.proto")]
    rc = protoc.main(["protoc", f"-I{ROOT / 'Protos'}", f"-I{include}", f"--python_out={out}", *protos])
    assert rc == 0, "grpc_tools.protoc failed"
    sys.path.insert(0, str(out))
    return (importlib.import_module("herald.v1.push_service_pb2"),
            importlib.import_module("herald.v1.device_service_pb2"),
            importlib.import_module("herald.v1.types_pb2"))


def write(target: str, name: str, data: bytes) -> None:
    directory = CORPUS / target
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_bytes(data)


def grpc_frame(body: bytes, compressed: bool = False) -> bytes:
    return struct.pack(">BI", 1 if compressed else 0, len(body)) + body


def request_seeds(push, device, types) -> list[tuple[str, bytes]]:
    ios = types.PLATFORM_IOS
    android = types.PLATFORM_ANDROID

    def content(**extra):
        c = types.Content(**extra)
        return c

    plain = content(title=types.LocalizedText(text="Hi"), body=types.LocalizedText(text="There"), sound="default",
                    badge=3, thread_id="t1", category="c1", image_url="https://example.com/a.png")
    plain.user_info.update({"deep": {"link": "app://x", "n": 1.5, "list": [1, "two", None, True]}})
    translated = content(
        title=types.LocalizedText(translations={"en": "Hello", "de": "Hallo", "de-CH": "Grüezi", "pt_BR": "Olá"}),
        body=types.LocalizedText(translations={"en": "World", "de": "Welt", "de-CH": "Wält", "pt_BR": "Mundo"}),
        default_locale="en")
    many = {f"x{i}": f"t{i}" for i in range(300)}
    many_locales = content(title=types.LocalizedText(translations=many),
                           body=types.LocalizedText(translations=many), default_locale="x0")

    seeds = []
    sched = push.ScheduleRequest(bundle_id="com.example.app", platform=ios, user_id="alice", campaign_id="c1",
                                 idempotency_key="k1", deliver_within_hours=24, content=plain,
                                 priority=types.PRIORITY_HIGH, ttl_seconds=3600, collapse_id="col")
    sched.ios.update({"interruption-level": "time-sensitive"})
    seeds.append(("schedule-ios", bytes([SCHEDULE]) + sched.SerializeToString(deterministic=True)))
    ctx = push.ScheduleRequest(bundle_id="com.example.app", platform=ios, user_id="bob", campaign_id="c2",
                               delivery_method=types.DELIVERY_METHOD_CONTEXT_AWARE,
                               target_delivery_time="2026-01-01T12:00:00+01:00", deliver_after="2026-01-01T06:00:00Z",
                               content=translated)
    seeds.append(("schedule-context-aware-translated", bytes([SCHEDULE]) + ctx.SerializeToString(deterministic=True)))
    droid = push.ScheduleRequest(bundle_id="com.example.app", platform=android, user_id="carol", campaign_id="c3",
                                 delivery_method=types.DELIVERY_METHOD_TRADITIONAL, deliver_within_hours=1,
                                 content=translated)
    droid.android.update({"notification": {"color": "#ff0000"}})
    seeds.append(("schedule-android", bytes([SCHEDULE]) + droid.SerializeToString(deterministic=True)))
    wide = push.ScheduleRequest(bundle_id="com.example.app", platform=ios, user_id="dave", campaign_id="c4",
                                deliver_within_hours=2, content=many_locales)
    seeds.append(("schedule-many-locales", bytes([SCHEDULE]) + wide.SerializeToString(deterministic=True)))

    seeds.append(("cancel", bytes([CANCEL]) + push.CancelRequest(
        bundle_id="com.example.app", platform=ios, user_id="alice", campaign_id="c1",
        idempotency_key="k1").SerializeToString(deterministic=True)))

    render = push.RenderRequest(bundle_id="com.example.app", platform=ios, content=translated, locale="de-AT",
                                device_token="ab" * 32, ttl_seconds=0, priority=types.PRIORITY_LOW)
    seeds.append(("render-ios", bytes([RENDER]) + render.SerializeToString(deterministic=True)))
    render_fcm = push.RenderRequest(bundle_id="com.example.app", platform=android, content=plain, locale="pt-BR",
                                    device_token="fcm-token:abc")
    render_fcm.android.update({"priority": "high"})
    seeds.append(("render-android", bytes([RENDER]) + render_fcm.SerializeToString(deterministic=True)))

    seeds.append(("register-ios", bytes([REGISTER]) + device.RegisterDeviceRequest(
        bundle_id="com.example.app", platform=ios, user_id="alice", device_token="AB" * 32, locale="de_CH",
        timezone="Europe/Zurich", environment=types.APNS_ENVIRONMENT_SANDBOX).SerializeToString(deterministic=True)))
    seeds.append(("register-android", bytes([REGISTER]) + device.RegisterDeviceRequest(
        bundle_id="com.example.app", platform=android, user_id="carol", device_token="fcm:tok",
        locale="pt-BR", timezone="America/Sao_Paulo").SerializeToString(deterministic=True)))
    seeds.append(("unregister", bytes([UNREGISTER]) + device.UnregisterDeviceRequest(
        bundle_id="com.example.app", device_token="ab" * 32).SerializeToString(deterministic=True)))
    seeds.append(("report-displayed", bytes([REPORT]) + push.ReportEventRequest(
        bundle_id="com.example.app", platform=ios, user_id="alice", idempotency_key="k1",
        event=push.MESSAGE_EVENT_DISPLAYED, device_token="ab" * 32).SerializeToString(deterministic=True)))

    # Hostile: a Struct nested past the 100-level limit (large enough to be walked).
    nested = {}
    node = nested
    for _ in range(150):
        node["k"] = {}
        node = node["k"]
    deep = push.RenderRequest(bundle_id="com.example.app", platform=ios, content=plain)
    deep.ios.update(nested)
    seeds.append(("render-deep-struct", bytes([RENDER]) + deep.SerializeToString(deterministic=True)))
    # Hostile: invalid UTF-8 in a string field, and an unknown enum number.
    bad = push.CancelRequest(bundle_id="x", platform=ios, user_id="u", campaign_id="c",
                             idempotency_key="k").SerializeToString(deterministic=True).replace(b"\x1a\x01u", b"\x1a\x01\xff")
    seeds.append(("cancel-bad-utf8", bytes([CANCEL]) + bad + b"\x10\x63"))
    # The unauthenticated and streaming routes, and the read side: plain, and
    # with an unknown field (a 2-byte StatusRequest `08 01` once trapped the
    # process: the empty message's descriptor has no field table).
    seeds.append(("status", bytes([STATUS])))
    seeds.append(("status-unknown-field", bytes([STATUS]) + field(1, 1)))
    seeds.append(("health-check", bytes([HEALTH_CHECK]) + field(1, b"herald.v1.PushService")))
    seeds.append(("health-check-unknown-service", bytes([HEALTH_CHECK]) + field(1, b"nope") + field(9, b"x")))
    seeds.append(("health-watch", bytes([HEALTH_WATCH]) + field(1, b"")))
    seeds.append(("reflection-list-services", bytes([REFLECTION_V1]) + field(7, b"*")))
    seeds.append(("reflection-symbol", bytes([REFLECTION_V1]) + field(4, b"herald.v1.PushService")))
    seeds.append(("reflection-file", bytes([REFLECTION_V1ALPHA]) + field(3, b"herald/v1/push_service.proto")))
    seeds.append(("reflection-extension", bytes([REFLECTION_V1ALPHA])
                  + field(5, field(1, b"herald.v1.ScheduleRequest") + field(2, 100))))
    seeds.append(("get-message-key", bytes([GET_MESSAGE]) + field(1, b"com.example.app") + field(3, b"k1")))
    seeds.append(("get-message-id", bytes([GET_MESSAGE]) + field(1, b"com.example.app")
                  + field(2, b"0190a0b0-0000-7000-8000-000000000000")))
    seeds.append(("list-messages", bytes([LIST_MESSAGES]) + field(1, b"com.example.app") + field(2, b"alice")
                  + field(4, 1) + field(4, 2) + field(5, 10)))
    seeds.append(("campaign-report", bytes([CAMPAIGN_REPORT]) + field(1, b"com.example.app") + field(2, b"c1")
                  + field(3, b"2025-12-31T00:00:00Z")))
    seeds.append(("stream-events-from-start", bytes([STREAM_EVENTS]) + field(1, b"com.example.app") + field(3, 1)))
    seeds.append(("stream-events-filtered", bytes([STREAM_EVENTS]) + field(1, b"com.example.app") + field(2, b"e1.5.0")
                  + field(4, b"welcome") + field(5, 5) + field(5, 14)))
    return seeds


def deframer_seeds(first_request: bytes) -> list[tuple[str, bytes]]:
    body = first_request
    bomb = gzip.compress(bytes(5 * 1024 * 1024), 9, mtime=0)  # inflates past the 4 MiB limit
    # Control byte: bit 0 clear = gzip negotiated; high nibble = log2 of the largest chunk.
    return [
        ("one-message", bytes([0x40]) + grpc_frame(body)),
        ("two-messages-1-byte-chunks", bytes([0x00]) + grpc_frame(body) + grpc_frame(b"")),
        ("gzip", bytes([0x80]) + grpc_frame(gzip.compress(body, mtime=0), compressed=True)),
        ("gzip-not-negotiated", bytes([0x81]) + grpc_frame(gzip.compress(body, mtime=0), compressed=True)),
        ("gzip-bomb", bytes([0xF0]) + grpc_frame(bomb, compressed=True)),
        ("gzip-corrupt", bytes([0x30]) + grpc_frame(gzip.compress(body, mtime=0)[:-3] + b"\0\0\0", compressed=True)),
        ("gzip-trailing", bytes([0x30]) + grpc_frame(gzip.compress(body, mtime=0) + b"junk", compressed=True)),
        ("truncated", bytes([0x20]) + grpc_frame(body)[:-4]),
        ("too-large", bytes([0x10]) + struct.pack(">BI", 0, 0x7FFFFFFF) + b"abc"),
        ("bad-flags", bytes([0x10]) + b"\x02\x00\x00\x00\x01x"),
    ]


def json_seeds() -> list[tuple[str, bytes]]:
    docs = {
        "apns-payload": {"aps": {"alert": {"title": "Hi", "body": "There"}, "badge": 1, "sound": "default",
                                 "mutable-content": 1}, "deep": {"link": "app://x"}},
        "numbers": [0, -0.0, 1.5, -42, 1e16, 1e-7, 9007199254740993, 0.1, 123456789012345.6, 5e-324, 1.7976931348623157e308],
        "unicode": {"é": "e\u0301", "\u2028": "\u2029", "emoji": "\U0001F600", "ctl": "\b\f\n\r\t\u0001"},
    }
    seeds = [(name, json.dumps(doc, ensure_ascii=(name != "unicode")).encode()) for name, doc in docs.items()]
    seeds += [
        ("surrogates", b'["\\ud83d\\ude00", "\\u00e9", "\\/"]'),
        ("unpaired-surrogate", b'"\\ud800x"'),
        ("deep-arrays", b"[" * 300 + b"]" * 300),
        ("duplicate-keys", b'{"a":1,"a":{"b":[true,false,null]}}'),
        ("whitespace", b' \t\r\n{ "k" : [ 1 , 2 ] } \n'),
        ("bad-utf8", b'"\xc3\x28"'),
    ]
    return seeds


def main() -> None:
    push, device, types = stubs()
    requests = request_seeds(push, device, types)
    for name, data in requests:
        # Prefixed with the selector: replayed in RPC order, Cancel and
        # ReportEvent find what Schedule stored.
        write("requests", f"{data[0]}-{name}", data)
    for name, data in deframer_seeds(requests[0][1][1:]):
        write("deframer", name, data)
    for name, data in json_seeds():
        write("json", name, data)
    total = sum(p.stat().st_size for p in CORPUS.rglob("*") if p.is_file())
    print(f"seeds written under {CORPUS.relative_to(ROOT)}: {total} bytes")


if __name__ == "__main__":
    main()
