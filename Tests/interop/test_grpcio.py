"""Stock grpcio clients, with stubs generated from Protos/, against the real
`herald serve` binary."""
from __future__ import annotations

import datetime as dt

import grpc
import pytest


@pytest.fixture
def channel(herald):
    with grpc.insecure_channel(herald.address) as ch:
        grpc.channel_ready_future(ch).result(timeout=30)
        yield ch


@pytest.mark.parametrize("service", ["", "herald.v1.PushService", "herald.v1.DeviceService", "grpc.health.v1.Health"])
def test_health_check_serving(stubs, channel, service):
    reply = stubs.HealthStub(channel).Check(stubs.health_pb2.HealthCheckRequest(service=service), timeout=10)
    assert reply.status == stubs.health_pb2.HealthCheckResponse.SERVING


def test_health_check_unknown_service_is_not_found(stubs, channel):
    with pytest.raises(grpc.RpcError) as err:
        stubs.HealthStub(channel).Check(stubs.health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=10)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    assert "no.such.Service" in err.value.details()


def test_status_reports_the_running_instance(stubs, channel):
    push = stubs.push_pb2_grpc.PushServiceStub(channel)
    before = dt.datetime.now(dt.timezone.utc)
    reply = push.Status(stubs.push_pb2.StatusRequest(), timeout=10)
    assert reply.serving == stubs.push_pb2.SERVING_STATE_SERVING
    assert reply.version
    started = dt.datetime.fromisoformat(reply.started_at.replace("Z", "+00:00"))
    assert started <= before
    assert (before - started).total_seconds() < 600
    assert reply.uptime_seconds >= 0
    # This call itself is in flight and at least one connection is open.
    assert reply.server.connections_open >= 1
    assert reply.server.rpcs_in_flight >= 1
    second = push.Status(stubs.push_pb2.StatusRequest(), timeout=10)
    assert second.server.rpcs_total > reply.server.rpcs_total


def test_metadata_and_deadline_are_accepted(stubs, channel):
    push = stubs.push_pb2_grpc.PushServiceStub(channel)
    metadata = [("x-request-id", "abc-123"), ("x-trace-bin", b"\x00\x01\xff")]
    reply = push.Status(stubs.push_pb2.StatusRequest(), metadata=metadata, timeout=5)
    assert reply.serving == stubs.push_pb2.SERVING_STATE_SERVING


def test_gzip_compressed_calls_from_a_stock_client(stubs, herald):
    """grpcio with channel-level gzip: every request arrives compressed."""
    t, p = stubs.types_pb2, stubs.push_pb2
    request = p.RenderRequest(
        bundle_id="com.example.app", platform=t.PLATFORM_IOS, idempotency_key="gz-1", locale="de",
        content=t.Content(title=t.LocalizedText(translations={"en": "Hi", "de": "Hallo " * 40}),
                          body=t.LocalizedText(translations={"en": "B", "de": "Körper " * 40}), default_locale="en"))
    with grpc.insecure_channel(herald.address) as plain:
        expected = stubs.push_pb2_grpc.PushServiceStub(plain).Render(request, timeout=10).apns.payload_json
    with grpc.insecure_channel(herald.address, compression=grpc.Compression.Gzip) as gzipped:
        push = stubs.push_pb2_grpc.PushServiceStub(gzipped)
        assert push.Render(request, timeout=10).apns.payload_json == expected
        health = stubs.HealthStub(gzipped).Check(stubs.health_pb2.HealthCheckRequest(service="herald.v1.PushService"), timeout=10)
        assert health.status == stubs.health_pb2.HealthCheckResponse.SERVING
