"""Hostile request *content* through stock grpcio against the real binary:
requests over the documented limits, strings with NUL bytes, huge echoed
input, repeated embedded messages, and bulk the store must not keep. Each
answer is a clear status whose message names the field and stays short."""
from __future__ import annotations

import json
import os
import pathlib

import grpc
import pytest
from google.protobuf import struct_pb2

from test_hostile import _varint, field

BUNDLE = "com.example.app"
TOKEN = "ab" * 32
HUGE = "x" * 17_000


@pytest.fixture
def channel(herald):
    with grpc.insecure_channel(herald.address, options=[
            ("grpc.max_send_message_length", 8 << 20)]) as ch:
        yield ch


def struct(value: dict) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(value)
    return s


def raw(channel, method: str, payload: bytes) -> bytes:
    """Sends already-serialized bytes (identity serializers)."""
    return channel.unary_unary(f"/herald.v1.{method}")(payload, timeout=30)


def refused(call) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as err:
        call()
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, err.value.details()
    assert len(err.value.details().encode()) < 300, err.value.details()
    return err.value


def with_fields(request, overrides: dict):
    """Sets fields on a request; message-typed ones are copied in."""
    for key, value in overrides.items():
        if key == "content" or isinstance(value, struct_pb2.Struct):
            getattr(request, key).CopyFrom(value)
        else:
            setattr(request, key, value)
    return request


def render_request(stubs, **overrides):
    t, p = stubs.types_pb2, stubs.push_pb2
    request = p.RenderRequest(
        bundle_id=BUNDLE, platform=t.PLATFORM_IOS,
        content=t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="There")))
    return with_fields(request, overrides)


def schedule_request(stubs, **overrides):
    t, p = stubs.types_pb2, stubs.push_pb2
    request = p.ScheduleRequest(
        bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id="u1", campaign_id="c1", deliver_within_hours=1,
        content=t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="There")))
    return with_fields(request, overrides)


def translated(stubs, locales, default):
    t = stubs.types_pb2
    return t.Content(title=t.LocalizedText(translations={k: "t" for k in locales}),
                     body=t.LocalizedText(translations={k: "b" for k in locales}), default_locale=default)


# Limits: each named, refused before anything big is built.

@pytest.mark.parametrize("where,expect", [
    ("user_info", "content.user_info: has 16000 keys; the limit is 1000 keys per object"),
    ("ios", "ios: has 16000 keys; the limit is 1000 keys per object"),
    ("android", "android: has 16000 keys; the limit is 1000 keys per object"),
])
def test_objects_over_the_key_limit_are_refused_by_name(stubs, channel, where, expect):
    keys = struct({f"k{i}": i for i in range(16_000)})
    push = stubs.push_pb2_grpc.PushServiceStub(channel)
    if where == "user_info":
        t = stubs.types_pb2
        request = render_request(stubs, content=t.Content(
            title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="B"), user_info=keys))
    else:
        request = render_request(stubs, **{where: keys})
    assert expect in refused(lambda: push.Render(request, timeout=30)).details()


def test_locales_over_the_limit_are_refused_by_name(stubs, channel):
    push = stubs.push_pb2_grpc.PushServiceStub(channel)
    locales = [f"l{i}" for i in range(8_000)]
    request = schedule_request(stubs, content=translated(stubs, locales, "l0"))
    err = refused(lambda: push.Schedule(request, timeout=30))
    assert "content.title.translations: has 8000 locales; the limit is 200 locales per text" in err.details()


def test_nesting_over_the_limit_is_refused(stubs, channel):
    value: dict = {}
    for _ in range(60):
        value = {"k": value}
    push = stubs.push_pb2_grpc.PushServiceStub(channel)
    err = refused(lambda: push.Render(render_request(stubs, ios=struct(value)), timeout=30))
    assert "nests messages deeper than 100 levels" in err.details()


# Echoed input is quoted truncated.

@pytest.mark.parametrize("case", ["locale", "default_locale", "translation_tag"])
def test_echoed_client_input_is_truncated(stubs, channel, case):
    push = stubs.push_pb2_grpc.PushServiceStub(channel)
    tag = "de-" + HUGE
    if case == "locale":
        request = render_request(stubs, locale=tag)
    elif case == "default_locale":
        t = stubs.types_pb2
        request = render_request(stubs, content=t.Content(
            title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="B"), default_locale=tag))
    else:
        request = render_request(stubs, content=translated(stubs, ["en", tag], "en"))
    err = refused(lambda: push.Render(request, timeout=30))
    assert "locale" in err.details() and "the limit is 35" in err.details()


def test_health_quotes_unknown_service_names_truncated(stubs, herald):
    with grpc.insecure_channel(herald.address) as ch:
        with pytest.raises(grpc.RpcError) as err:
            stubs.HealthStub(ch).Check(stubs.health_pb2.HealthCheckRequest(service=HUGE), timeout=10)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    assert err.value.details().startswith("unknown service \"xxxx")
    assert len(err.value.details().encode()) < 300


# NUL bytes: refused by field name, never truncated.

def test_idempotency_keys_differing_after_a_nul_are_refused(stubs, channel):
    push = stubs.push_pb2_grpc.PushServiceStub(channel)
    for key in ["nul-a\0x", "nul-a\0y"]:
        err = refused(lambda: push.Schedule(schedule_request(stubs, idempotency_key=key), timeout=10))
        assert "idempotency_key: contains a NUL byte" in err.details()


@pytest.mark.parametrize("overrides,expect", [
    ({"user_id": "alice\0mallory"}, "user_id: contains a NUL byte"),
    ({"content": "title"}, "content.title.text: contains a NUL byte"),
    ({"content": "translation"}, "content.title.translations[en]: contains a NUL byte"),
    ({"content": "translation_key"}, "content.title.translations (a key): contains a NUL byte"),
    ({"content": "user_info"}, "content.user_info.link: contains a NUL byte"),
    ({"ios": {"aps": {"alert": {"title": "a\0b"}}}}, "ios.aps.alert.title: contains a NUL byte"),
])
def test_schedule_strings_with_nul_are_refused_by_field(stubs, channel, overrides, expect):
    t = stubs.types_pb2
    contents = {
        "title": t.Content(title=t.LocalizedText(text="Hi\0hidden"), body=t.LocalizedText(text="B")),
        "translation": translated(stubs, ["en"], "en"),
        "translation_key": translated(stubs, ["e\0n"], "en"),
        "user_info": t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="B"),
                               user_info=struct({"link": "app://a\0b"})),
    }
    if overrides.get("content") == "translation":
        contents["translation"].title.translations["en"] = "a\0b"
    resolved = {k: contents[v] if k == "content" else struct(v) if isinstance(v, dict) else v
                for k, v in overrides.items()}
    push = stubs.push_pb2_grpc.PushServiceStub(channel)
    err = refused(lambda: push.Schedule(schedule_request(stubs, **resolved), timeout=10))
    assert expect in err.details()


def test_every_rpc_refuses_nul_in_strings(stubs, channel):
    t, p, d = stubs.types_pb2, stubs.push_pb2, stubs.device_pb2
    push = stubs.push_pb2_grpc.PushServiceStub(channel)
    devices = stubs.device_pb2_grpc.DeviceServiceStub(channel)
    calls = [
        (lambda: push.Render(render_request(stubs, collapse_id="a\0b"), timeout=10), "collapse_id"),
        (lambda: push.Cancel(p.CancelRequest(bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id="u",
                                             campaign_id="c", idempotency_key="k\0"), timeout=10), "idempotency_key"),
        (lambda: push.ReportEvent(p.ReportEventRequest(bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id="u\0v",
                                                       idempotency_key="k", event=p.MESSAGE_EVENT_DISPLAYED),
                                  timeout=10), "user_id"),
        (lambda: devices.RegisterDevice(d.RegisterDeviceRequest(bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id="u",
                                                                device_token=TOKEN, locale="de\0CH"), timeout=10),
         "locale"),
        (lambda: devices.UnregisterDevice(d.UnregisterDeviceRequest(bundle_id=BUNDLE, device_token=TOKEN + "\0"),
                                          timeout=10), "device_token"),
    ]
    for call, name in calls:
        assert f"{name}: contains a NUL byte" in refused(call).details()


# Validation gaps.

def test_register_device_time_zone_must_exist(stubs, channel):
    t, d = stubs.types_pb2, stubs.device_pb2
    devices = stubs.device_pb2_grpc.DeviceServiceStub(channel)

    def register(tz):
        return devices.RegisterDevice(d.RegisterDeviceRequest(
            bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id="u", device_token=TOKEN, timezone=tz), timeout=10)

    err = refused(lambda: register("Mars/Olympus"))
    assert 'timezone: "Mars/Olympus" is not an IANA time zone name' in err.details()
    assert "timezone" in refused(lambda: register("Europe/" + HUGE)).details()
    if pathlib.Path("/usr/share/zoneinfo/Europe/Zurich").exists():
        register("Europe/Zurich")


def test_unregister_validates_the_token(stubs, channel):
    d = stubs.device_pb2
    devices = stubs.device_pb2_grpc.DeviceServiceStub(channel)
    err = refused(lambda: devices.UnregisterDevice(d.UnregisterDeviceRequest(bundle_id=BUNDLE, device_token="zz"),
                                                   timeout=10))
    assert "device_token" in err.details()
    assert not devices.UnregisterDevice(d.UnregisterDeviceRequest(bundle_id=BUNDLE, device_token=TOKEN),
                                        timeout=10).removed


def test_report_event_parses_occurred_at(stubs, channel):
    t, p = stubs.types_pb2, stubs.push_pb2
    push = stubs.push_pb2_grpc.PushServiceStub(channel)
    request = p.ReportEventRequest(bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id="u", idempotency_key="k",
                                   event=p.MESSAGE_EVENT_DISPLAYED, occurred_at="yesterday")
    assert "occurred_at: not an RFC 3339 timestamp" in refused(lambda: push.ReportEvent(request, timeout=10)).details()


def test_repeated_embedded_messages_are_merged(stubs, channel):
    """`content` sent as two partial messages, which every stock library
    merges: title from the first, body and badge from the second."""
    t, p = stubs.types_pb2, stubs.push_pb2
    first = p.RenderRequest(bundle_id=BUNDLE, platform=t.PLATFORM_IOS,
                            content=t.Content(title=t.LocalizedText(text="Hi"))).SerializeToString()
    second = p.RenderRequest(content=t.Content(body=t.LocalizedText(text="There"), badge=2,
                                               user_info=struct({"a": 1}))).SerializeToString()
    third = p.RenderRequest(content=t.Content(user_info=struct({"b": 2}))).SerializeToString()
    # What a stock parser makes of the concatenation:
    expected = p.RenderRequest.FromString(first + second + third)
    assert expected.content.title.text == "Hi" and expected.content.body.text == "There"
    reply = p.RenderResponse.FromString(raw(channel, "PushService/Render", first + second + third))
    payload = json.loads(reply.apns.payload_json)
    assert payload["aps"]["alert"] == {"title": "Hi", "body": "There"}
    assert payload["aps"]["badge"] == 2
    assert payload["a"] == 1 and payload["b"] == 2

    schedule = schedule_request(stubs, idempotency_key="merged").SerializeToString()
    more = p.ScheduleRequest(content=t.Content(subtitle=t.LocalizedText(text="Sub"))).SerializeToString()
    assert p.ScheduleResponse.FromString(raw(channel, "PushService/Schedule", schedule + more)).message_id


def test_schedule_does_not_store_the_other_platforms_override_or_unknown_fields(stubs, channel, herald):
    """An iOS Schedule with a 3.9 MiB `android` override, and one with
    3.9 MiB of unknown fields: both accepted, neither kept on disk."""
    push = stubs.push_pb2_grpc.PushServiceStub(channel)
    bulk = "x" * (3_900_000)
    push.Schedule(schedule_request(stubs, idempotency_key="big-android", android=struct({"junk": bulk})), timeout=30)
    unknown = field(999, 2, bulk.encode())
    raw(channel, "PushService/Schedule",
        schedule_request(stubs, idempotency_key="big-unknown").SerializeToString() + unknown)
    # Durable before the answer: whatever was stored is on disk now.
    size = sum(f.stat().st_size for f in pathlib.Path(herald.data_dir).rglob("*") if f.is_file())
    assert size < 1_000_000, f"{size} bytes in {os.listdir(herald.data_dir)}"
