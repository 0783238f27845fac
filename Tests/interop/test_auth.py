"""Access tokens (SPEC §7) against the real binary."""
from __future__ import annotations

import os
import subprocess
import tempfile

import grpc
import pytest

from conftest import herald_binary, start_herald

TOKENS = """\
# label token bundles
ci   ci-token-0123456789abcdef   com.example.app
ops  ops-token-0123456789abcdef  *
"""


@pytest.fixture
def secured(tmp_path):
    path = tmp_path / "tokens"
    path.write_text(TOKENS)
    os.chmod(path, 0o600)
    server = start_herald("--tokens-file", str(path))
    yield server
    assert server.stop() == 0
    assert not any("ci-token" in line or "ops-token" in line for line in server.stderr_lines), "a token was logged"


def render_request(stubs, bundle="com.example.app"):
    t = stubs.types_pb2
    return stubs.push_pb2.RenderRequest(
        bundle_id=bundle, platform=t.PLATFORM_IOS,
        content=t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="There")))


@pytest.mark.parametrize("metadata,bundle,code", [
    (None, "com.example.app", grpc.StatusCode.UNAUTHENTICATED),
    ([("authorization", "Token wrong-token-0123456789")], "com.example.app", grpc.StatusCode.UNAUTHENTICATED),
    ([("authorization", "Basic ci-token-0123456789abcdef")], "com.example.app", grpc.StatusCode.UNAUTHENTICATED),
    ([("authorization", "Token ci-token-0123456789abcdef")], "com.other.app", grpc.StatusCode.PERMISSION_DENIED),
    ([("authorization", "Token ci-token-0123456789abcdef")], "com.example.app", grpc.StatusCode.OK),
    ([("authorization", "Token ops-token-0123456789abcdef")], "com.other.app", grpc.StatusCode.OK),
])
def test_render_requires_a_token_for_the_bundle(stubs, secured, metadata, bundle, code):
    with grpc.insecure_channel(secured.address) as channel:
        push = stubs.push_pb2_grpc.PushServiceStub(channel)
        if code == grpc.StatusCode.OK:
            assert push.Render(render_request(stubs, bundle), metadata=metadata, timeout=10).apns.payload_json
        else:
            with pytest.raises(grpc.RpcError) as err:
                push.Render(render_request(stubs, bundle), metadata=metadata, timeout=10)
            assert err.value.code() == code
            assert "ci-token" not in err.value.details()


def test_status_and_health_need_no_token(stubs, secured):
    with grpc.insecure_channel(secured.address) as channel:
        # Without a token: serving state and counts only (test_security_ops.py checks what is left out).
        status = stubs.push_pb2_grpc.PushServiceStub(channel).Status(stubs.push_pb2.StatusRequest(), timeout=10)
        assert status.serving == stubs.push_pb2.SERVING_STATE_SERVING
        health = stubs.HealthStub(channel).Check(stubs.health_pb2.HealthCheckRequest(), timeout=10)
        assert health.status == stubs.health_pb2.HealthCheckResponse.SERVING


def test_without_tokens_herald_refuses_a_non_loopback_host():
    result = subprocess.run([herald_binary(), "serve", "--host", "0.0.0.0", "--port", "0",
                             "--data-dir", tempfile.mkdtemp()], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "loopback" in result.stderr


def test_a_bad_tokens_file_is_a_clear_error(tmp_path):
    path = tmp_path / "tokens"
    path.write_text("ci short com.example.app\n")
    result = subprocess.run([herald_binary(), "serve", "--port", "0", "--data-dir", str(tmp_path),
                             "--tokens-file", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert f"{path}:1" in result.stderr and "shorter than 16" in result.stderr


def every_guarded_call(stubs, channel, bundle):
    """One minimal call per token-guarded RPC, for `bundle`."""
    t, p, d = stubs.types_pb2, stubs.push_pb2, stubs.device_pb2
    push = stubs.push_pb2_grpc.PushServiceStub(channel)
    devices = stubs.device_pb2_grpc.DeviceServiceStub(channel)
    content = t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="There"))
    return {
        "Schedule": lambda md: push.Schedule(p.ScheduleRequest(
            bundle_id=bundle, platform=t.PLATFORM_IOS, user_id="u", campaign_id="c", deliver_within_hours=1,
            content=content), metadata=md, timeout=10),
        "Cancel": lambda md: push.Cancel(p.CancelRequest(
            bundle_id=bundle, platform=t.PLATFORM_IOS, user_id="u", campaign_id="c", idempotency_key="k"),
            metadata=md, timeout=10),
        "Render": lambda md: push.Render(p.RenderRequest(bundle_id=bundle, platform=t.PLATFORM_IOS, content=content),
                                         metadata=md, timeout=10),
        "ReportEvent": lambda md: push.ReportEvent(p.ReportEventRequest(
            bundle_id=bundle, platform=t.PLATFORM_IOS, user_id="u", idempotency_key="k",
            event=p.MESSAGE_EVENT_DISPLAYED), metadata=md, timeout=10),
        "RegisterDevice": lambda md: devices.RegisterDevice(d.RegisterDeviceRequest(
            bundle_id=bundle, platform=t.PLATFORM_IOS, user_id="u", device_token="ab" * 32, locale="en"),
            metadata=md, timeout=10),
        "UnregisterDevice": lambda md: devices.UnregisterDevice(d.UnregisterDeviceRequest(
            bundle_id=bundle, device_token="ab" * 32), metadata=md, timeout=10),
    }


@pytest.mark.parametrize("rpc", ["Schedule", "Cancel", "Render", "ReportEvent", "RegisterDevice", "UnregisterDevice"])
def test_every_guarded_rpc_checks_token_and_bundle(stubs, secured, rpc):
    good = [("authorization", "Token ci-token-0123456789abcdef")]
    with grpc.insecure_channel(secured.address) as channel:
        allowed = every_guarded_call(stubs, channel, "com.example.app")[rpc]
        denied = every_guarded_call(stubs, channel, "com.other.app")[rpc]
        with pytest.raises(grpc.RpcError) as err:
            allowed(None)
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as err:
            denied(good)
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
        try:
            allowed(good)  # past auth: OK, or a domain answer such as NOT_FOUND
        except grpc.RpcError as e:
            assert e.code() not in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED,
                                    grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN), e
