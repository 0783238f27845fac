"""Hostile request content on the RPCs that touch the store: invalid UTF-8,
unknown enum numbers, wrong wire types, truncated bytes. Each gets a clear
status naming the problem, nothing is stored, and the server keeps serving."""
from __future__ import annotations

import grpc
import pytest


def field(number: int, wire_type: int, payload: bytes) -> bytes:
    key = _varint((number << 3) | wire_type)
    if wire_type == 2:
        return key + _varint(len(payload)) + payload
    return key + payload


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | 0x80 if n else byte)
        if not n:
            return bytes(out)


def text(s: bytes) -> bytes:  # LocalizedText{text}
    return field(1, 2, s)


def schedule_bytes(*, user: bytes = b"u1", platform: int = 1, hours: int = 1) -> bytes:
    content = field(1, 2, text(b"Hi")) + field(3, 2, text(b"There"))
    return (field(1, 2, b"com.example.app") + field(2, 0, _varint(platform)) + field(3, 2, user)
            + field(4, 2, b"camp") + field(7, 0, _varint(hours)) + field(10, 2, content))


@pytest.fixture
def channel(herald):
    with grpc.insecure_channel(herald.address) as ch:
        yield ch


def call(channel, method, raw):
    return channel.unary_unary(f"/herald.v1.{method}")(raw, timeout=10)


def assert_nothing_stored(stubs, channel):
    """Schedules one valid message and waits until Status counts it (Status
    is refreshed in the background): then exactly one message exists, so the
    hostile request stored nothing."""
    import time
    call(channel, "PushService/Schedule", schedule_bytes(user=b"valid-user"))
    push = stubs.push_pb2_grpc.PushServiceStub(channel)
    deadline = time.monotonic() + 15
    while True:
        status = push.Status(stubs.push_pb2.StatusRequest(), timeout=10)
        total = sum(c.count for c in status.messages)
        if total >= 1:
            break
        assert time.monotonic() < deadline, "Status never counted the valid message"
        time.sleep(0.05)
    assert total == 1, status


@pytest.mark.parametrize("raw,expect", [
    (schedule_bytes(user=b"\xff\xfe bad"), "user_id: is not valid UTF-8"),
    (schedule_bytes(platform=99), "platform: unknown value 99"),
    (schedule_bytes(hours=0), "deliver_within_hours"),
    (schedule_bytes(hours=169), "deliver_within_hours"),
    (field(1, 0, _varint(5)), "not a valid herald.v1.ScheduleRequest"),        # string field sent as a varint
    (schedule_bytes()[:-3], "not a valid herald.v1.ScheduleRequest"),          # truncated
    (b"\x0a\xff\xff\xff\xff\x0f", "not a valid herald.v1.ScheduleRequest"),    # length past the end
])
def test_schedule_rejects_hostile_content(stubs, channel, raw, expect):
    with pytest.raises(grpc.RpcError) as err:
        call(channel, "PushService/Schedule", raw)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert expect in err.value.details(), err.value.details()
    # The server is fine and nothing was stored.
    assert_nothing_stored(stubs, channel)


@pytest.mark.parametrize("method,raw,expect", [
    ("DeviceService/RegisterDevice",
     field(1, 2, b"com.example.app") + field(2, 0, _varint(1)) + field(3, 2, b"u") + field(4, 2, b"zz" * 32),
     "device_token"),
    ("DeviceService/RegisterDevice",
     field(1, 2, b"com.example.app") + field(2, 0, _varint(1)) + field(3, 2, b"u") + field(4, 2, b"ab" * 32)
     + field(6, 2, b"../../etc/passwd"), "timezone"),
    ("DeviceService/RegisterDevice",
     field(1, 2, b"com.example.app") + field(2, 0, _varint(1)) + field(3, 2, b"u") + field(4, 2, b"ab" * 32)
     + field(7, 0, _varint(7)), "environment: unknown value 7"),
    ("PushService/Cancel", field(1, 2, b"com.example.app"), "user_id: is required"),
    ("PushService/ReportEvent",
     field(1, 2, b"com.example.app") + field(2, 0, _varint(1)) + field(3, 2, b"u") + field(4, 2, b"k")
     + field(5, 0, _varint(9)), "event"),
])
def test_other_rpcs_reject_hostile_content(channel, method, raw, expect):
    with pytest.raises(grpc.RpcError) as err:
        call(channel, method, raw)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert expect in err.value.details(), err.value.details()


def test_oversized_strings_are_refused_by_name(stubs, channel):
    t, p = stubs.types_pb2, stubs.push_pb2
    request = p.ScheduleRequest(
        bundle_id="com.example.app", platform=t.PLATFORM_IOS, user_id="u" * 257, campaign_id="c" * 129,
        idempotency_key="k" * 129, collapse_id="x" * 65, deliver_within_hours=1,
        content=t.Content(title=t.LocalizedText(text="a"), body=t.LocalizedText(text="b")))
    with pytest.raises(grpc.RpcError) as err:
        stubs.push_pb2_grpc.PushServiceStub(channel).Schedule(request, timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    for name in ["user_id", "campaign_id", "idempotency_key", "collapse_id"]:
        assert name in err.value.details(), err.value.details()


# Issue 24 item 0: `08 01` (field 1 = 1) in a StatusRequest, which has no
# fields, trapped the process. Every route gets unknown fields of each wire
# type, and the server must answer each and keep serving.
UNKNOWN_FIELDS = [
    field(1, 0, _varint(1)),
    field(15, 1, b"\xff" * 8),
    field(19000, 2, b"a\x00b"),
    field(536870911, 5, b"\x01\x02\x03\x04"),
]
UNAUTHENTICATED_ROUTES = [
    "/herald.v1.PushService/Status",
    "/grpc.health.v1.Health/Check",
]
STORE_ROUTES = [
    "/herald.v1.PushService/Schedule", "/herald.v1.PushService/Cancel", "/herald.v1.PushService/Render",
    "/herald.v1.PushService/ReportEvent", "/herald.v1.PushService/GetMessage",
    "/herald.v1.PushService/ListMessages", "/herald.v1.PushService/CampaignReport",
    "/herald.v1.DeviceService/RegisterDevice", "/herald.v1.DeviceService/UnregisterDevice",
]


@pytest.mark.parametrize("path", UNAUTHENTICATED_ROUTES + STORE_ROUTES)
def test_unknown_fields_on_every_unary_route_are_answered(herald, path):
    with grpc.insecure_channel(herald.address) as ch:
        for unknown in UNKNOWN_FIELDS:
            try:
                ch.unary_unary(path)(unknown, timeout=10)
            except grpc.RpcError as error:
                # A clear status about the request, never a dead server.
                assert error.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND,
                                        grpc.StatusCode.FAILED_PRECONDITION), (path, error.code(), error.details())
        # Still serving.
        assert ch.unary_unary("/grpc.health.v1.Health/Check")(b"", timeout=10) == b"\x08\x01"


def test_status_with_unknown_field_answers(herald):
    with grpc.insecure_channel(herald.address) as ch:
        answer = ch.unary_unary("/herald.v1.PushService/Status")(b"\x08\x01", timeout=10)
        assert answer  # a StatusResponse
        assert herald.proc.poll() is None


@pytest.mark.parametrize("path", ["/grpc.health.v1.Health/Watch"])
def test_unknown_fields_on_streaming_routes_are_answered(herald, path):
    with grpc.insecure_channel(herald.address) as ch:
        for unknown in UNKNOWN_FIELDS:
            stream = ch.unary_stream(path)(unknown, timeout=5)
            try:
                first = next(iter(stream))
                assert first in (b"\x08\x01", b"\x08\x03")  # SERVING, or SERVICE_UNKNOWN
            except grpc.RpcError as error:
                # Field 1 is the service name: a varint there is a wrong wire type.
                assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
            stream.cancel()
        for unknown in UNKNOWN_FIELDS:
            answers = list(ch.stream_stream("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo")(
                iter([unknown, field(7, 2, b"*")]), timeout=10))
            assert len(answers) == 2
        assert herald.proc.poll() is None
