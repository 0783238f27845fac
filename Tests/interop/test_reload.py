"""SIGHUP reloads the tokens file and the APNs routes file (issue 11):
atomically, keeping the old configuration when a file is bad, logging what
changed by label (never a token), and never ending the process."""
from __future__ import annotations

import re
import signal
import subprocess
import threading
import time

import grpc
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from conftest import herald_binary, start_herald

OLD = "ci-token-old-0123456789abcdef"
NEW = "ci-token-new-0123456789abcdef"
OPS = "ops-token-0123456789abcdef"
BUNDLE = "com.example.reload"
DEVICE = "a7" * 32


def wait_for(condition, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def log_count(server, needle):
    return sum(needle in line for line in list(server.stderr_lines))


def reload(server, needle="configuration reloaded"):
    """SIGHUP, then wait for the next log line containing `needle`."""
    before = log_count(server, needle)
    server.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: log_count(server, needle) > before or server.proc.poll() is not None, needle)
    assert server.proc.poll() is None, "SIGHUP ended the process"
    return [line for line in server.stderr_lines if needle in line][-1]


def render(stubs, channel, token, bundle="com.example.app"):
    t = stubs.types_pb2
    request = stubs.push_pb2.RenderRequest(
        bundle_id=bundle, platform=t.PLATFORM_IOS,
        content=t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="There")))
    try:
        stubs.push_pb2_grpc.PushServiceStub(channel).Render(request, metadata=[("authorization", f"Token {token}")],
                                                            timeout=10)
        return grpc.StatusCode.OK
    except grpc.RpcError as error:
        return error.code()


@pytest.fixture
def tokens_file(tmp_path):
    path = tmp_path / "tokens"
    path.write_text(f"ci {OLD} com.example.app\nops {OPS} *\n")
    return path


@pytest.fixture
def secured(tokens_file, tmp_path):
    server = start_herald("--tokens-file", str(tokens_file), data_dir=str(tmp_path / "data"))
    yield server
    assert server.stop() == 0
    logs = "".join(server.stderr_lines)
    assert OLD not in logs and NEW not in logs and OPS not in logs, "a token was logged"


def test_a_broken_tokens_file_keeps_the_old_tokens_and_logs_an_error(stubs, secured, tokens_file):
    tokens_file.write_text(f"ci {NEW}\n")  # two fields: invalid
    line = reload(secured, "reload failed")
    assert f"{tokens_file}:1" in line and NEW not in line
    tokens_file.unlink()
    reload(secured, "reload failed")
    with grpc.insecure_channel(secured.address) as channel:
        assert render(stubs, channel, OLD) == grpc.StatusCode.OK
        assert render(stubs, channel, NEW) == grpc.StatusCode.UNAUTHENTICATED


def test_sighup_never_ends_the_process(stubs, secured):
    for _ in range(5):
        reload(secured)
    with grpc.insecure_channel(secured.address) as channel:
        assert render(stubs, channel, OLD) == grpc.StatusCode.OK


def test_a_rotated_token_takes_effect_and_calls_in_flight_are_unaffected(stubs, secured, tokens_file):
    codes: list[grpc.StatusCode] = []
    stop = threading.Event()

    def caller():
        # One connection calling with the old token throughout the reload.
        with grpc.insecure_channel(secured.address) as channel:
            while not stop.is_set():
                codes.append(render(stubs, channel, OLD))

    with grpc.insecure_channel(secured.address) as channel:
        assert render(stubs, channel, OLD) == grpc.StatusCode.OK
        thread = threading.Thread(target=caller)
        thread.start()
        try:
            wait_for(lambda: len(codes) >= 20, "calls before the reload")
            tokens_file.write_text(f"ci {NEW} com.example.app\nops {OPS} *\nqa qa-token-0123456789abcdef *\n")
            line = reload(secured)
            changes = dict(re.findall(r"(tokens_\w+)=(\S+)", line))
            assert changes == {"tokens_added": "qa", "tokens_removed": "none", "tokens_changed": "ci"}, line
            count = len(codes)
            wait_for(lambda: len(codes) >= count + 20, "calls after the reload")
        finally:
            stop.set()
            thread.join(timeout=30)
        # The same connection, now with the new token.
        assert render(stubs, channel, NEW) == grpc.StatusCode.OK
        assert render(stubs, channel, OLD) == grpc.StatusCode.UNAUTHENTICATED
        assert render(stubs, channel, OPS, bundle="com.any") == grpc.StatusCode.OK
    # Every call either ran under the old token or was refused after the
    # swap: nothing failed otherwise, and no OK came after a refusal.
    assert set(codes) <= {grpc.StatusCode.OK, grpc.StatusCode.UNAUTHENTICATED}, set(codes)
    first_refusal = codes.index(grpc.StatusCode.UNAUTHENTICATED)
    assert first_refusal >= 20 and grpc.StatusCode.OK not in codes[first_refusal:]


@pytest.fixture
def simulators(request, tmp_path):
    """Two `herald apns-sim` processes taking the same key; each logs its
    deliveries. An indirect parameter gives extra flags for the first."""
    key = ec.generate_private_key(ec.SECP256R1())
    p8 = tmp_path / "AuthKey_RELOADKEY1.p8"
    p8.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()))
    public = tmp_path / "public.pem"
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    sims, procs = [], []
    for name in ("a", "b"):
        ca = tmp_path / f"ca-{name}.pem"
        extra = list(getattr(request, "param", [])) if name == "a" else []
        proc = subprocess.Popen([herald_binary(), "apns-sim", "--port", "0", "--ca-out", str(ca),
                                 "--key-id", "RELOADKEY1", "--team-id", "TEAM123456", "--public-key", str(public),
                                 "--topics", BUNDLE, *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(proc)
        match = re.search(r"listening on (\S+):(\d+)", proc.stdout.readline())
        assert match
        log: list[str] = []
        threading.Thread(target=lambda p=proc, l=log: l.extend(p.stderr), daemon=True).start()
        sims.append({"port": int(match.group(2)), "ca": str(ca), "log": log})
    yield p8, sims
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=30)


def route_line(p8, sim):
    return (f"team=TEAM123456 key-id=RELOADKEY1 key={p8} bundles={BUNDLE} env=sandbox "
            f"endpoint=127.0.0.1:{sim['port']} ca={sim['ca']}\n")


def test_a_changed_route_takes_effect(stubs, simulators, tmp_path):
    p8, (a, b) = simulators
    routes = tmp_path / "routes"
    routes.write_text(route_line(p8, a))
    server = start_herald("--grace-seconds", "0", "--apns-routes-file", str(routes), data_dir=str(tmp_path / "data"))
    try:
        t, d, p = stubs.types_pb2, stubs.device_pb2, stubs.push_pb2
        with grpc.insecure_channel(server.address) as channel:
            push = stubs.push_pb2_grpc.PushServiceStub(channel)
            stubs.device_pb2_grpc.DeviceServiceStub(channel).RegisterDevice(d.RegisterDeviceRequest(
                bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id="u1", device_token=DEVICE, locale="en",
                environment=t.APNS_ENVIRONMENT_SANDBOX), timeout=10)

            def schedule_and_wait(key, sent):
                push.Schedule(p.ScheduleRequest(
                    bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id="u1", campaign_id="c", idempotency_key=key,
                    delivery_method=t.DELIVERY_METHOD_TRADITIONAL, deliver_within_hours=1,
                    content=t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text=key))), timeout=10)

                def done():
                    counts = {t.MessageState.Name(c.state): c.count
                              for c in push.Status(p.StatusRequest(), timeout=10).messages}
                    assert counts.get("MESSAGE_STATE_FAILED", 0) == 0, (counts, server.stderr_lines[-5:])
                    return counts.get("MESSAGE_STATE_SENT") == sent
                wait_for(done, f"{key} sent")

            # A bad routes file first: the route in force stays.
            routes.write_text("team=TEAM123456 key-id=RELOADKEY1\n")
            assert f"{routes}:1" in reload(server, "reload failed")
            schedule_and_wait("before", 1)
            assert sum(line.startswith("delivered ") for line in a["log"]) == 1

            routes.write_text(route_line(p8, b))
            line = reload(server)
            assert f"127.0.0.1:{b['port']}" in line and "pools_retired=1" in line, line
            schedule_and_wait("after", 2)
            status = push.Status(p.StatusRequest(), timeout=10)
            assert [pool.endpoint for pool in status.apns_pools] == [f"127.0.0.1:{b['port']}"]
        assert sum(line.startswith("delivered ") for line in b["log"]) == 1, b["log"]
        assert sum(line.startswith("delivered ") for line in a["log"]) == 1, a["log"]
    finally:
        assert server.stop() == 0


@pytest.mark.parametrize("simulators", [["--delay-ms", "400"]], indirect=True)
def test_sends_in_flight_finish_on_the_old_route(stubs, simulators, tmp_path):
    # The old endpoint answers slowly, so pushes are in flight on it when the
    # routes change: they finish there (the old client is shut down only
    # after them); nothing fails, every message is sent once.
    p8, (a, b) = simulators
    routes = tmp_path / "routes"
    routes.write_text(route_line(p8, a))
    server = start_herald("--grace-seconds", "0", "--apns-routes-file", str(routes), data_dir=str(tmp_path / "data"))
    count = 20
    try:
        t, d, p = stubs.types_pb2, stubs.device_pb2, stubs.push_pb2
        with grpc.insecure_channel(server.address) as channel:
            push = stubs.push_pb2_grpc.PushServiceStub(channel)
            devices = stubs.device_pb2_grpc.DeviceServiceStub(channel)
            for user in range(count):
                devices.RegisterDevice(d.RegisterDeviceRequest(
                    bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=f"u{user}", device_token=f"{user:02x}" * 32,
                    locale="en", environment=t.APNS_ENVIRONMENT_SANDBOX), timeout=10)
            for user in range(count):
                push.Schedule(p.ScheduleRequest(
                    bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=f"u{user}", campaign_id="c",
                    idempotency_key=f"k{user}", delivery_method=t.DELIVERY_METHOD_TRADITIONAL, deliver_within_hours=1,
                    content=t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="x"))), timeout=10)
            routes.write_text(route_line(p8, b))
            assert "pools_retired=1" in reload(server)

            def all_sent():
                counts = {t.MessageState.Name(c.state): c.count
                          for c in push.Status(p.StatusRequest(), timeout=10).messages}
                assert counts.get("MESSAGE_STATE_FAILED", 0) == 0, (counts, server.stderr_lines[-5:])
                return counts.get("MESSAGE_STATE_SENT") == count
            wait_for(all_sent, "every message sent")
        delivered_a = sum(line.startswith("delivered ") for line in a["log"])
        delivered_b = sum(line.startswith("delivered ") for line in b["log"])
        assert delivered_a + delivered_b == count, (delivered_a, delivered_b)
        assert delivered_a >= 1, "no push was in flight on the old route"
    finally:
        assert server.stop() == 0
