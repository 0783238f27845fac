"""Operators' view of the real binary: the admin listener (`/metrics`,
`/healthz`, `/readyz`) under hostile clients first, then metrics that match
what the test did, Health and `/readyz` following a data directory that turns
read-only, a wrong-team APNs route in Status and the error log, JSON logs and
the access log."""
from __future__ import annotations

import json
import os
import pwd
import re
import socket
import subprocess
import tempfile
import time

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import herald_binary, routed_apns_simulator, start_herald

BUNDLE = "com.example.obs"
MS_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
HEALTH_CHECK = "grpc.health.v1.Health/Check"


def http(port: int, request: bytes, timeout: float = 10) -> tuple[int, dict[str, str], bytes]:
    """One raw HTTP/1.1 exchange on a fresh connection: (status, headers, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
            head, sep, body = data.partition(b"\r\n\r\n")
            if sep:
                headers = dict(line.split(": ", 1) for line in head.decode().split("\r\n")[1:])
                length = int(headers.get("Content-Length", "0"))
                if len(body) >= length:
                    break
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in lines[1:])}
    return int(lines[0].split(" ")[1]), headers, body


def get(port: int, path: str) -> tuple[int, bytes]:
    status, _, body = http(port, f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    return status, body


def closed_by_server(sock: socket.socket, within: float) -> bool:
    """True when the server closes `sock` (EOF or reset) within `within` seconds."""
    sock.settimeout(within)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    """`/metrics` parsed by prometheus_client: {(sample name, sorted labels): value}."""
    status, body = get(port, "/metrics")
    assert status == 200
    samples = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture
def admin_herald():
    server = start_herald("--admin-port", "0", "--admin-timeout", "1")
    yield server
    assert server.stop() == 0


# -- hostile clients of the admin port ------------------------------------------


def test_unknown_paths_and_other_methods_get_short_answers(admin_herald):
    port = admin_herald.admin_port
    status, body = get(port, "/nope")
    assert status == 404 and len(body) < 200
    status, headers, body = http(port, b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
    assert status == 405 and headers.get("allow") == "GET, HEAD" and len(body) < 200
    status, _, _ = http(port, b"DELETE /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 405
    status, _, _ = http(port, b"GARBAGE\r\n\r\n")
    assert status == 400
    assert get(port, "/healthz") == (200, b"ok\n")


def test_huge_headers_close_the_connection(admin_herald):
    port = admin_herald.admin_port
    with socket.create_connection(("127.0.0.1", port)) as sock:
        try:
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 64 * 1024 + b"\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert closed_by_server(sock, 5)
    assert get(port, "/healthz")[0] == 200


def test_a_slow_request_is_closed_at_the_timeout(admin_herald):
    port = admin_herald.admin_port
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /metrics HTTP/1.1\r\n")
        began = time.monotonic()
        closed = False
        # A byte every 0.2 s: never idle, never a whole request (slowloris).
        while time.monotonic() - began < 10:
            try:
                sock.sendall(b"X")
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            if closed_by_server(sock, 0.2):
                closed = True
                break
        assert closed, "the admin listener kept a slowloris connection open"
        assert time.monotonic() - began < 5
    assert get(port, "/healthz")[0] == 200


def test_connections_beyond_the_cap_are_closed(admin_herald):
    port = admin_herald.admin_port
    socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(80)]
    try:
        closed = sum(closed_by_server(s, 0.5) for s in socks[32:])
        # The first 32 are held (until their 1 s timeout); the rest refused.
        assert closed >= 40
    finally:
        for s in socks:
            s.close()
    deadline = time.monotonic() + 10
    while True:
        try:
            if get(port, "/readyz")[0] == 200:
                break
        except OSError:
            pass
        assert time.monotonic() < deadline
        time.sleep(0.05)


# -- metrics that match what happened --------------------------------------------


def test_metrics_count_the_rpcs_and_deliveries_made(stubs):
    good, bad, gone = "a1" * 32, "b2" * 32, "c3" * 32
    server = start_herald("--admin-port", "0", "--grace-seconds", "0", "--sim-bad-token", bad,
                          "--sim-unregistered", gone)
    try:
        t, d, p = stubs.types_pb2, stubs.device_pb2, stubs.push_pb2
        rpcs: dict[tuple[str, str], int] = {}

        def count(method, code="OK"):
            rpcs[(method, code)] = rpcs.get((method, code), 0) + 1

        with grpc.insecure_channel(server.address) as channel:
            health = stubs.HealthStub(channel)
            devices = stubs.device_pb2_grpc.DeviceServiceStub(channel)
            push = stubs.push_pb2_grpc.PushServiceStub(channel)
            for _ in range(25):
                health.Check(stubs.health_pb2.HealthCheckRequest(), timeout=10)
                count(HEALTH_CHECK)
            for token in (good, bad, gone):
                devices.RegisterDevice(d.RegisterDeviceRequest(
                    bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id="u1", device_token=token, locale="en"),
                    timeout=10)
                count("herald.v1.DeviceService/RegisterDevice")
            with pytest.raises(grpc.RpcError) as failed:
                push.Schedule(p.ScheduleRequest(platform=t.PLATFORM_IOS, user_id="u1"), timeout=10)
            count("herald.v1.PushService/Schedule", failed.value.code().name)
            push.Schedule(p.ScheduleRequest(
                bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id="u1", campaign_id="c", idempotency_key="m-1",
                delivery_method=t.DELIVERY_METHOD_TRADITIONAL, deliver_within_hours=1,
                content=t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="There"))), timeout=10)
            count("herald.v1.PushService/Schedule")
            deadline = time.monotonic() + 30
            while True:
                status = push.Status(p.StatusRequest(), timeout=10)
                count("herald.v1.PushService/Status")
                counts = {t.MessageState.Name(c.state): c.count for c in status.messages}
                if counts.get("MESSAGE_STATE_SENT") == 1:
                    break
                assert time.monotonic() < deadline, counts
                time.sleep(0.05)

        # Calls are counted as their streams close: wait for the last one.
        deadline = time.monotonic() + 10
        while True:
            samples = scrape(server.admin_port)
            seen = sum(v for (name, _), v in samples.items() if name == "herald_rpc_requests_total")
            if seen >= sum(rpcs.values()) and value(samples, "herald_messages", state="sent") == 1:
                break
            assert time.monotonic() < deadline, (seen, rpcs)
            time.sleep(0.05)
        made = {(dict(labels)["method"], dict(labels)["code"]): v
                for (name, labels), v in samples.items() if name == "herald_rpc_requests_total" and v > 0}
        assert made == rpcs
        assert value(samples, "herald_rpc_duration_seconds_count", method=HEALTH_CHECK) == 25
        assert value(samples, "herald_deliveries_total", service="apns", outcome="accepted") == 1
        assert value(samples, "herald_deliveries_total", service="apns", outcome="bad_device_token") == 1
        assert value(samples, "herald_deliveries_total", service="apns", outcome="unregistered") == 1
        assert value(samples, "herald_provider_request_duration_seconds_count", service="apns") == 3
        assert value(samples, "herald_dispatch_lateness_seconds_count") == 1
        assert value(samples, "herald_store_commit_duration_seconds_count") >= 4
        assert value(samples, "herald_oldest_due_lag_seconds") == 0
        connections = [v for (name, labels), v in samples.items()
                       if name == "herald_provider_connections" and dict(labels)["service"] == "apns"]
        assert connections and connections[0] >= 1
        # The bundled FCM simulator's pool is reported too (no Android send yet: no connection needed).
        assert any(name == "herald_provider_connections" and dict(labels)["service"] == "fcm"
                   for (name, labels) in samples)
    finally:
        assert server.stop() == 0


# -- health that follows the store ---------------------------------------------


def as_nobody():
    nobody = pwd.getpwnam("nobody")

    def drop():
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)
    return nobody, drop


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run herald as another user")
def test_readyz_and_health_watch_follow_a_read_only_data_dir(stubs):
    nobody, drop = as_nobody()
    try:
        subprocess.run([herald_binary(), "--version"], preexec_fn=drop, capture_output=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as error:
        pytest.skip(f"`nobody` cannot run the herald binary here ({error}): a parent directory is not searchable")
    # A data dir `nobody` owns (root ignores permissions, so herald runs as nobody).
    parent = tempfile.mkdtemp(prefix="herald-ro-")
    os.chmod(parent, 0o755)
    data = os.path.join(parent, "data")
    os.mkdir(data)
    os.chown(data, nobody.pw_uid, nobody.pw_gid)
    server = start_herald("--admin-port", "0", data_dir=data, preexec_fn=drop)
    try:
        port = server.admin_port
        deadline = time.monotonic() + 10
        while get(port, "/readyz")[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        serving = stubs.health_pb2.HealthCheckResponse.SERVING
        not_serving = stubs.health_pb2.HealthCheckResponse.NOT_SERVING
        with grpc.insecure_channel(server.address) as channel:
            watch = channel.unary_stream(
                "/grpc.health.v1.Health/Watch",
                request_serializer=stubs.health_pb2.HealthCheckRequest.SerializeToString,
                response_deserializer=stubs.health_pb2.HealthCheckResponse.FromString,
            )(stubs.health_pb2.HealthCheckRequest(service=""), timeout=60)
            assert next(watch).status == serving
            os.chmod(data, 0o555)
            assert next(watch).status == not_serving
            status, body = get(port, "/readyz")
            assert status == 503 and b"store not writable" in body
            assert stubs.HealthStub(channel).Check(stubs.health_pb2.HealthCheckRequest(), timeout=10).status == not_serving
            os.chmod(data, 0o755)
            assert next(watch).status == serving
            assert get(port, "/readyz")[0] == 200
            watch.cancel()
        assert any("store not writable" in line for line in server.stderr_lines)
    finally:
        os.chmod(data, 0o755)
        assert server.stop() == 0


# -- a wrong-team route: Status and the error log, in JSON -------------------------


@pytest.fixture
def simulator(tmp_path):
    yield from routed_apns_simulator(tmp_path, BUNDLE)


def test_a_wrong_team_route_shows_in_status_and_logs_at_error(stubs, simulator, tmp_path):
    route = (f"team=WRONGTEAM1 key-id=ROUTEKEY01 key={simulator['p8']} bundles={BUNDLE} env=production "
             f"endpoint=127.0.0.1:{simulator['port']} ca={simulator['ca']}")
    server = start_herald("--grace-seconds", "0", "--log-format", "json", "--apns-route", route,
                          data_dir=str(tmp_path / "data"))
    try:
        t, d, p = stubs.types_pb2, stubs.device_pb2, stubs.push_pb2
        with grpc.insecure_channel(server.address) as channel:
            stubs.device_pb2_grpc.DeviceServiceStub(channel).RegisterDevice(d.RegisterDeviceRequest(
                bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id="u1", device_token="d4" * 32, locale="en"),
                timeout=10)
            push = stubs.push_pb2_grpc.PushServiceStub(channel)
            push.Schedule(p.ScheduleRequest(
                bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id="u1", campaign_id="c", idempotency_key="w-1",
                delivery_method=t.DELIVERY_METHOD_TRADITIONAL, deliver_within_hours=1,
                content=t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="x"))), timeout=10)
            deadline = time.monotonic() + 30
            while True:
                status = push.Status(p.StatusRequest(), timeout=10)
                pools = [pool for pool in status.apns_pools if pool.auth_failures > 0]
                if pools:
                    break
                assert time.monotonic() < deadline, status
                time.sleep(0.05)
        pool = pools[0]
        assert "WRONGTEAM1" in pool.route and BUNDLE in pool.route
        assert "InvalidProviderToken" in pool.last_error
        assert MS_TIMESTAMP.match(pool.last_error_at)
        assert {r.reason: r.count for r in pool.auth_failure_reasons} == {"InvalidProviderToken": pool.auth_failures}
        assert status.snapshot_age_ms < 5000
    finally:
        assert server.stop() == 0
    lines = [json.loads(line) for line in server.stderr_lines if line.strip()]
    assert lines and all(MS_TIMESTAMP.match(line["ts"]) for line in lines)
    errors = [line for line in lines if line["level"] == "error" and "WRONGTEAM1" in line.get("route", "")]
    assert len(errors) == 1 and errors[0]["reason"] == "InvalidProviderToken", errors


# -- the access log ------------------------------------------------------------------


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_the_access_log_has_one_line_per_rpc_and_never_a_token(stubs, tmp_path, log_format):
    secret = "s3cr3t-token-value-0123456789"
    tokens = tmp_path / "tokens"
    tokens.write_text(f"ops {secret} {BUNDLE}\n")
    access = tmp_path / "access.log"
    server = start_herald("--tokens-file", str(tokens), "--access-log", str(access), "--log-format", log_format)
    try:
        t, p = stubs.types_pb2, stubs.push_pb2
        auth = (("authorization", f"Token {secret}"),)
        with grpc.insecure_channel(server.address) as channel:
            push = stubs.push_pb2_grpc.PushServiceStub(channel)
            for _ in range(3):
                push.Render(p.RenderRequest(
                    bundle_id=BUNDLE, platform=t.PLATFORM_IOS, device_token="e5" * 32,
                    content=t.Content(title=t.LocalizedText(text="Secret title"), body=t.LocalizedText(text="b"))),
                    metadata=auth, timeout=10)
            with pytest.raises(grpc.RpcError):
                push.Render(p.RenderRequest(bundle_id=BUNDLE, platform=t.PLATFORM_IOS), timeout=10)
            stubs.HealthStub(channel).Check(stubs.health_pb2.HealthCheckRequest(), timeout=10)
        deadline = time.monotonic() + 10
        while len(access.read_text().splitlines()) < 5:
            assert time.monotonic() < deadline, access.read_text()
            time.sleep(0.05)
    finally:
        assert server.stop() == 0
    text = access.read_text()
    assert secret not in text and "Secret title" not in text
    lines = text.splitlines()
    assert len(lines) == 5
    if log_format == "json":
        records = [json.loads(line) for line in lines]
        assert all(MS_TIMESTAMP.match(r["ts"]) and r["peer"].startswith("127.0.0.1:") for r in records)
        assert [(r["method"], r["code"], r["bundle"]) for r in records] == [
            ("herald.v1.PushService/Render", "OK", BUNDLE)] * 3 + [
            # Refused from its headers: the body (and its bundle) never read.
            ("herald.v1.PushService/Render", "UNAUTHENTICATED", None), (HEALTH_CHECK, "OK", None)]
        assert all(isinstance(r["duration_ms"], float) for r in records)
    else:
        assert all(MS_TIMESTAMP.match(line.split(" ")[0]) for line in lines)
        assert all(f"bundle={BUNDLE}" in line and "code=" in line and "duration_ms=" in line for line in lines[:3])
        assert "code=UNAUTHENTICATED" in lines[3] and "bundle=-" in lines[3] and "method=grpc.health.v1.Health/Check" in lines[4]


# -- the flags from a config file ------------------------------------------------------


def test_admin_and_log_settings_come_from_the_config_file(tmp_path):
    config = tmp_path / "herald.conf"
    config.write_text("admin-port = 0\nadmin-host = 127.0.0.1\nlog-format = json\n")
    server = start_herald("--config", str(config), admin=True)
    try:
        assert get(server.admin_port, "/readyz")[0] in (200, 503)
        deadline = time.monotonic() + 10
        while get(server.admin_port, "/readyz")[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        assert server.stop() == 0
    lines = [json.loads(line) for line in server.stderr_lines if line.strip()]
    assert lines and all(MS_TIMESTAMP.match(line["ts"]) and line["label"] == "herald" for line in lines)


def test_bad_log_format_and_admin_port_are_refused():
    for flags in (["--log-format", "xml"], ["--admin-port", "70000"]):
        result = subprocess.run([herald_binary(), "serve", "--port", "0", *flags], capture_output=True, text=True,
                                timeout=30)
        assert result.returncode != 0 and flags[0] in result.stderr
