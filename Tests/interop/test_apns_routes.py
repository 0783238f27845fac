"""`herald serve` delivering to an external `herald apns-sim` through a
configured token route: a real ES256 key, a CA file, TLS, the sandbox
environment, and Status showing the pool."""
from __future__ import annotations

import subprocess
import time

import grpc
import pytest

from conftest import herald_binary, routed_apns_simulator, start_herald

BUNDLE = "com.example.routed"
TOKEN = "e5" * 32


@pytest.fixture
def simulator(tmp_path):
    yield from routed_apns_simulator(tmp_path, BUNDLE)


def test_schedule_goes_out_through_the_configured_route(stubs, simulator, tmp_path):
    route = (f"team=TEAM123456 key-id=ROUTEKEY01 key={simulator['p8']} bundles={BUNDLE} env=sandbox "
             f"endpoint=127.0.0.1:{simulator['port']} ca={simulator['ca']}")
    server = start_herald("--grace-seconds", "0", "--apns-route", route, data_dir=str(tmp_path / "data"))
    try:
        t, d, p = stubs.types_pb2, stubs.device_pb2, stubs.push_pb2
        with grpc.insecure_channel(server.address) as channel:
            devices = stubs.device_pb2_grpc.DeviceServiceStub(channel)
            push = stubs.push_pb2_grpc.PushServiceStub(channel)
            devices.RegisterDevice(d.RegisterDeviceRequest(
                bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id="u1", device_token=TOKEN, locale="en",
                environment=t.APNS_ENVIRONMENT_SANDBOX), timeout=10)
            push.Schedule(p.ScheduleRequest(
                bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id="u1", campaign_id="c", idempotency_key="routed-1",
                delivery_method=t.DELIVERY_METHOD_TRADITIONAL, deliver_within_hours=1,
                content=t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="Routed"))), timeout=10)
            deadline = time.monotonic() + 30
            while True:
                status = push.Status(p.StatusRequest(), timeout=10)
                counts = {t.MessageState.Name(c.state): c.count for c in status.messages}
                if counts.get("MESSAGE_STATE_SENT") == 1:
                    break
                assert counts.get("MESSAGE_STATE_FAILED", 0) == 0, (counts, server.stderr_lines[-5:])
                assert time.monotonic() < deadline, (counts, simulator["log"][-5:])
                time.sleep(0.05)
            assert [pool.endpoint for pool in status.apns_pools] == [f"127.0.0.1:{simulator['port']}"]
            assert status.store.kind == "sqlite" and status.store.healthy
        delivered = [line for line in simulator["log"] if line.startswith("delivered ")]
        assert len(delivered) == 1, simulator["log"]
        assert f"token={TOKEN[:8]}" in delivered[0] and f"topic={BUNDLE}" in delivered[0] and "type=alert" in delivered[0]
    finally:
        assert server.stop() == 0


def test_a_route_with_a_missing_key_file_stops_start_up(tmp_path):
    result = subprocess.run([herald_binary(), "serve", "--port", "0", "--data-dir", str(tmp_path),
                             "--apns-route", "team=T key-id=K key=/nonexistent/AuthKey.p8"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "/nonexistent/AuthKey.p8" in result.stderr
