"""Render through a stock grpcio client: the exact APNs / FCM JSON."""
from __future__ import annotations

import json
import re
import time

import grpc
import pytest
from google.protobuf import struct_pb2

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
TOKEN = "ab" * 32


@pytest.fixture
def push(stubs, herald):
    with grpc.insecure_channel(herald.address) as channel:
        yield stubs.push_pb2_grpc.PushServiceStub(channel)


def struct(value: dict) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(value)
    return s


def localized_request(stubs, **overrides):
    t, p = stubs.types_pb2, stubs.push_pb2
    request = p.RenderRequest(
        bundle_id="com.example.app", platform=t.PLATFORM_IOS, priority=t.PRIORITY_HIGH,
        ttl_seconds=3600, collapse_id="c1", idempotency_key="key-1", locale="de_CH", device_token=TOKEN,
        content=t.Content(
            title=t.LocalizedText(translations={"en": "Hi", "de": "Hallo", "fr": "Salut"}),
            body=t.LocalizedText(translations={"en": "Body", "de": 'Körper "q"', "fr": "Corps"}),
            default_locale="en", sound="ding.caf", badge=0, thread_id="th",
            image_url="https://img.example.com/a.png", category="CAT",
            user_info=struct({"deep_link": "app://x", "n": 3, "nested": {"a": [1, 2.5, True, None]}}),
        ),
        ios=struct({"aps": {"alert": {"launch-image": "x.png"}, "interruption-level": "time-sensitive"}}),
    )
    for key, value in overrides.items():
        setattr(request, key, value)
    return request


def test_render_apns_exact_request(stubs, push):
    before = int(time.time())
    reply = push.Render(localized_request(stubs), timeout=10)
    after = int(time.time())
    assert reply.WhichOneof("rendering") == "apns"
    apns = reply.apns
    assert apns.path == f"/3/device/{TOKEN}"
    assert apns.payload_json == (
        '{"aps":{"alert":{"title":"Hallo","body":"Körper \\"q\\"","launch-image":"x.png"},'
        '"badge":0,"sound":"ding.caf","thread-id":"th","category":"CAT","mutable-content":1,'
        '"interruption-level":"time-sensitive"},'
        '"deep_link":"app://x","n":3,"nested":{"a":[1,2.5,true,null]},'
        '"ctx_idempotency_key":"key-1","ctx_image_url":"https://img.example.com/a.png"}'
    )
    assert apns.payload_bytes == len(apns.payload_json.encode("utf-8"))
    headers = dict(apns.headers)
    assert UUID.match(headers.pop("apns-id"))
    expiration = int(headers.pop("apns-expiration"))
    # The send time's fraction of a second rounds up: never expire early.
    assert before + 3600 <= expiration <= after + 3600 + 1
    assert headers == {"apns-topic": "com.example.app", "apns-push-type": "alert",
                       "apns-priority": "10", "apns-collapse-id": "c1"}
    assert reply.resolved_locale == "de"


@pytest.mark.parametrize("priority,expected", [("PRIORITY_LOW", "1"), ("PRIORITY_NORMAL", "5"),
                                               ("PRIORITY_HIGH", "10"), ("PRIORITY_UNSPECIFIED", "5")])
def test_priority_header(stubs, push, priority, expected):
    reply = push.Render(localized_request(stubs, priority=getattr(stubs.types_pb2, priority)), timeout=10)
    assert dict(reply.apns.headers)["apns-priority"] == expected


def test_ttl_zero_means_expiration_zero_and_unset_means_four_weeks(stubs, push):
    zero = push.Render(localized_request(stubs, ttl_seconds=0), timeout=10)
    assert dict(zero.apns.headers)["apns-expiration"] == "0"
    request = localized_request(stubs)
    request.ClearField("ttl_seconds")
    before = int(time.time())
    unset = push.Render(request, timeout=10)
    assert before + 2419200 <= int(dict(unset.apns.headers)["apns-expiration"]) <= int(time.time()) + 2419200 + 1


@pytest.mark.parametrize("locale,title", [("fr-CA", "Salut"), ("DE", "Hallo"), ("ja", "Hi"), ("", "Hi")])
def test_locale_fallbacks(stubs, push, locale, title):
    reply = push.Render(localized_request(stubs, locale=locale), timeout=10)
    assert json.loads(reply.apns.payload_json)["aps"]["alert"]["title"] == title


def test_render_fcm_exact_message(stubs, push):
    request = localized_request(stubs, platform=stubs.types_pb2.PLATFORM_ANDROID, device_token="fcm-token")
    # Skygear's platform.android holds AndroidConfig fields (collapse_key,
    # notification.icon, ...): they merge into message.android.
    request.android.update({"notification": {"channel_id": "news"}})
    reply = push.Render(request, timeout=10)
    assert reply.WhichOneof("rendering") == "fcm"
    assert reply.fcm.message_json == (
        '{"message":{"token":"fcm-token","notification":{"title":"Hallo","body":"Körper \\"q\\"",'
        '"image":"https://img.example.com/a.png"},'
        '"data":{"deep_link":"app://x","n":"3","nested":"{\\"a\\":[1,2.5,true,null]}",'
        '"ctx_idempotency_key":"key-1","ctx_image_url":"https://img.example.com/a.png"},'
        '"android":{"priority":"HIGH","ttl":"3600s","collapse_key":"c1",'
        '"notification":{"sound":"ding.caf","channel_id":"news"}}}}'
    )


def test_oversized_payload_names_locale_and_size(stubs, push):
    request = localized_request(stubs)
    request.content.body.translations["de"] = "ü" * 2100  # 4200 bytes of UTF-8
    with pytest.raises(grpc.RpcError) as err:
        push.Render(request, timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "de" in err.value.details() and "4096" in err.value.details()


def test_every_problem_is_listed(stubs, push):
    t, p = stubs.types_pb2, stubs.push_pb2
    request = p.RenderRequest(
        bundle_id="bad bundle", platform=t.PLATFORM_IOS,
        content=t.Content(title=t.LocalizedText(translations={"de": "a"}),
                          body=t.LocalizedText(translations={"en": "b"}),
                          user_info=struct({"aps": 1}), image_url="http://insecure.example.com/x.png"))
    with pytest.raises(grpc.RpcError) as err:
        push.Render(request, timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = err.value.details()
    for field in ["bundle_id", "content.body", "content.default_locale", "content.user_info", "content.image_url"]:
        assert field in details, details


def test_ios_disabled_is_invalid_argument(stubs, push):
    request = localized_request(stubs)
    request.ios.update({"enabled": False})
    with pytest.raises(grpc.RpcError) as err:
        push.Render(request, timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "ios.enabled" in err.value.details()


def test_deeply_nested_struct_is_rejected_and_server_survives(stubs, push, herald):
    # A Struct nested 250 000 levels deep (~3 MB): protobuf-c would recurse
    # that far. Each level is
    #   Struct{fields(1)=Entry{key(1)="k", value(2)=Value{struct_value(5)=<inner>}}}
    # Built from the inside out by lengths, then joined once.
    prefixes, inner_len = [], 0
    for _ in range(250_000):
        value_len = 1 + len(_varint(inner_len)) + inner_len
        entry_len = 3 + 1 + len(_varint(value_len)) + value_len
        prefix = (b"\x0a" + _varint(entry_len) + b"\x0a\x01k\x12" + _varint(value_len)
                  + b"\x2a" + _varint(inner_len))
        prefixes.append(prefix)
        inner_len += len(prefix)
    inner = b"".join(reversed(prefixes))
    assert len(inner) == inner_len
    content = b"\x3a" + _varint(len(inner)) + inner              # Content.user_info (7)
    raw = b"\x1a" + _varint(len(content)) + content              # RenderRequest.content (3)
    with grpc.insecure_channel(herald.address, options=[("grpc.max_send_message_length", 8 << 20)]) as channel:
        call = channel.unary_unary("/herald.v1.PushService/Render")
        with pytest.raises(grpc.RpcError) as err:
            call(raw, timeout=30)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "deeper" in err.value.details()
    assert push.Status(stubs.push_pb2.StatusRequest(), timeout=10).version


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)
