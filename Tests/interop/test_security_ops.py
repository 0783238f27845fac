"""Issue 24 items 2, 7 and 8 against the real binary, attacker first:

- the admin listener (item 2): a client that pipelines `GET /metrics` and
  never reads costs bounded memory and never delays `/healthz` for another
  client; one peer address cannot hold every connection slot; `/metrics` is
  rendered at most once a second;
- Status without a token (item 7): serving state and counts only;
- files and permissions (item 8): secrets files that group or others may
  read are refused naming the file; the data directory is 0700 and the
  store's files 0600."""
from __future__ import annotations

import os
import re
import socket
import stat
import subprocess
import tempfile
import threading
import time

import grpc
import pytest

from conftest import herald_binary, start_herald
from test_observability import closed_by_server

RENDERS = re.compile(rb"^herald_admin_metrics_renders_total (\d+)$", re.M)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def connect(port: int, source: str = "127.0.0.1", rcvbuf: int | None = None, timeout: float = 10) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(timeout)
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    return sock


def exchange(port: int, path: str, source: str = "127.0.0.1", timeout: float = 10) -> tuple[int, bytes]:
    """One GET on a fresh connection from `source`: (status, body)."""
    with connect(port, source, timeout=timeout) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


# -- item 2: the admin listener ----------------------------------------------------


def test_pipelined_metrics_never_read_cost_bounded_memory_and_healthz_stays_prompt():
    # A long request timeout keeps the attackers' connections open through the measurement.
    server = start_herald("--admin-port", "0", "--admin-timeout", "60")
    port = server.admin_port
    attackers: list[socket.socket] = []
    try:
        status, body = exchange(port, "/metrics")
        assert status == 200
        baseline = rss_kib(server.proc.pid)
        # Eight connections (the per-peer cap), each pipelining 1,000 scrapes
        # and never reading, with a small receive window so the server's
        # socket buffers fill at once. Unbounded, each would queue 1,000
        # bodies of len(body) bytes.
        request = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
        for _ in range(8):
            sock = connect(port, rcvbuf=4096)
            sock.setblocking(False)
            pending = request * 1000
            deadline = time.monotonic() + 5
            while pending and time.monotonic() < deadline:
                try:
                    pending = pending[sock.send(pending):]
                except BlockingIOError:
                    time.sleep(0.01)  # the server stopped reading: as it should
            attackers.append(sock)
        queued_unbounded_kib = 8 * 1000 * len(body) // 1024
        peak = baseline
        worst_healthz = 0.0
        began = time.monotonic()
        while time.monotonic() - began < 4:
            t0 = time.monotonic()
            assert exchange(port, "/healthz", source="127.0.0.2", timeout=5) == (200, b"ok\n")
            worst_healthz = max(worst_healthz, time.monotonic() - t0)
            peak = max(peak, rss_kib(server.proc.pid))
            time.sleep(0.05)
        growth = peak - baseline
        print(f"metrics body {len(body)} B; unbounded queue would be {queued_unbounded_kib} KiB; "
              f"RSS {baseline} KiB -> peak {peak} KiB (+{growth} KiB); worst /healthz {worst_healthz * 1000:.1f} ms")
        assert growth < 16 * 1024, f"RSS grew {growth} KiB under pipelined scrapes"
        assert worst_healthz < 1.0
    finally:
        for sock in attackers:
            sock.close()
        assert server.stop() == 0


def test_pipelined_requests_from_a_reading_client_all_get_answers():
    server = start_herald("--admin-port", "0")
    try:
        with connect(server.admin_port) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" * 200 + b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
            data = b""
            deadline = time.monotonic() + 20
            while data.count(b"HTTP/1.1 ") < 201:
                assert time.monotonic() < deadline, data.count(b"HTTP/1.1 ")
                chunk = sock.recv(65536)
                assert chunk, "closed early"
                data += chunk
        assert data.count(b"HTTP/1.1 200 OK") == 201
        assert data.endswith(b"ready\n")
    finally:
        assert server.stop() == 0


def test_one_peer_cannot_take_every_admin_slot():
    server = start_herald("--admin-port", "0", "--admin-timeout", "60")
    port = server.admin_port
    socks = [connect(port) for _ in range(40)]
    try:
        # Only --admin-max-connections-per-peer (8) of them are kept.
        closed = sum(closed_by_server(s, 0.5) for s in socks)
        assert closed == 32, closed
        # Another peer address still gets /healthz while the first holds its 8.
        assert exchange(port, "/healthz", source="127.0.0.2") == (200, b"ok\n")
        assert not any(closed_by_server(s, 0.05) for s in socks[:8])
    finally:
        for s in socks:
            s.close()
        assert server.stop() == 0


def test_the_per_peer_cap_is_a_setting(tmp_path):
    server = start_herald("--admin-port", "0", "--admin-timeout", "60", "--admin-max-connections-per-peer", "2")
    port = server.admin_port
    socks = [connect(port) for _ in range(5)]
    try:
        assert sum(closed_by_server(s, 0.5) for s in socks) == 3
    finally:
        for s in socks:
            s.close()
        assert server.stop() == 0
    result = subprocess.run([herald_binary(), "serve", "--port", "0", "--data-dir", str(tmp_path),
                             "--admin-port", "0", "--admin-max-connections-per-peer", "0"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "admin-max-connections-per-peer" in result.stderr


def test_metrics_are_rendered_at_most_once_a_second():
    server = start_herald("--admin-port", "0")
    try:
        seen: dict[int, set[bytes]] = {}
        began = time.monotonic()
        for _ in range(60):
            status, body = exchange(server.admin_port, "/metrics")
            assert status == 200
            match = RENDERS.search(body)
            assert match, body[-300:]
            seen.setdefault(int(match.group(1)), set()).add(body)
        elapsed = time.monotonic() - began
        # One rendering serves every scrape within its second: the same bytes.
        assert all(len(bodies) == 1 for bodies in seen.values())
        assert len(seen) <= elapsed + 1, (len(seen), elapsed)
        # And a new one comes after the second is over.
        first = max(seen)
        deadline = time.monotonic() + 10
        while int(RENDERS.search(exchange(server.admin_port, "/metrics")[1]).group(1)) == first:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        assert server.stop() == 0


# -- item 7: Status without a token ------------------------------------------------

OPS = "ops-token-0123456789abcdef"
CI = "ci-token-0123456789abcdef"


@pytest.fixture
def tenant_server(tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    tokens = tmp_path / "tokens"
    tokens.write_text(f"ops {OPS} *\nci {CI} com.example.app\n")
    os.chmod(tokens, 0o600)
    p8 = tmp_path / "AuthKey.p8"
    p8.write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    os.chmod(p8, 0o600)
    route = f"team=SECRETTEAM key-id=SECRETKEY1 key={p8} bundles=com.secret.tenant endpoint=127.0.0.1:9"
    data = str(tmp_path / "secret-data-dir")
    server = start_herald("--tokens-file", str(tokens), "--apns-route", route, data_dir=data)
    yield server
    assert server.stop() == 0


def status(stubs, server, token=None):
    metadata = [("authorization", f"Token {token}")] if token else None
    with grpc.insecure_channel(server.address) as channel:
        return stubs.push_pb2_grpc.PushServiceStub(channel).Status(
            stubs.push_pb2.StatusRequest(), metadata=metadata, timeout=10)


def test_status_without_a_token_shows_no_route_store_location_or_error(stubs, tenant_server):
    reply = status(stubs, tenant_server)
    raw = reply.SerializeToString()
    for secret in (b"SECRETTEAM", b"com.secret.tenant", b"secret-data-dir", b"127.0.0.1:9", b"sqlite:"):
        assert secret not in raw, secret
    assert not reply.apns_pools and not reply.fcm_pools
    assert reply.store.kind == "sqlite" and reply.store.healthy and not reply.store.detail
    assert not reply.version
    # State and counts stay.
    assert reply.serving == stubs.push_pb2.SERVING_STATE_SERVING
    assert reply.server.connections_open >= 1


def test_status_with_a_wrong_token_is_unauthenticated(stubs, tenant_server):
    with pytest.raises(grpc.RpcError) as err:
        status(stubs, tenant_server, "wrong-token-0123456789abcdef")
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_status_with_tokens_shows_what_each_may_see(stubs, tenant_server):
    full = status(stubs, tenant_server, OPS)
    assert any("SECRETTEAM" in pool.route and "com.secret.tenant" in pool.route for pool in full.apns_pools)
    assert "secret-data-dir" in full.store.detail
    assert full.version
    # A token for com.example.app only: not the other tenant's route, nor the store's location.
    scoped = status(stubs, tenant_server, CI)
    assert not any("SECRETTEAM" in pool.route for pool in scoped.apns_pools)
    assert b"com.secret.tenant" not in scoped.SerializeToString()
    assert not scoped.store.detail and scoped.version


# -- item 8: files and permissions -------------------------------------------------


def refused(*args: str, data_dir: str) -> subprocess.CompletedProcess:
    return subprocess.run([herald_binary(), "serve", "--port", "0", "--data-dir", data_dir, *args],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604])
def test_a_tokens_file_others_may_read_is_refused_naming_it(tmp_path, mode):
    tokens = tmp_path / "tokens"
    tokens.write_text(f"ops {OPS} *\n")
    os.chmod(tokens, mode)
    result = refused("--tokens-file", str(tokens), data_dir=str(tmp_path / "data"))
    assert result.returncode != 0
    assert str(tokens) in result.stderr and "chmod 600" in result.stderr, result.stderr


def test_key_and_routes_files_others_may_read_are_refused_naming_them(tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    p8 = tmp_path / "AuthKey.p8"
    p8.write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    os.chmod(p8, 0o644)
    route = f"team=T123 key-id=K123 key={p8} bundles=com.a endpoint=127.0.0.1:9"
    result = refused("--apns-route", route, data_dir=str(tmp_path / "data"))
    assert result.returncode != 0 and str(p8) in result.stderr and "chmod 600" in result.stderr, result.stderr
    os.chmod(p8, 0o600)
    routes = tmp_path / "routes"
    routes.write_text(route + "\n")
    os.chmod(routes, 0o644)
    result = refused("--apns-routes-file", str(routes), data_dir=str(tmp_path / "data"))
    assert result.returncode != 0 and str(routes) in result.stderr and "chmod 600" in result.stderr, result.stderr
    account = tmp_path / "sa.json"
    account.write_text("{}")
    os.chmod(account, 0o640)
    result = refused("--fcm-route", f"project=p1 key={account} bundles=com.a", data_dir=str(tmp_path / "data"))
    assert result.returncode != 0 and str(account) in result.stderr and "chmod 600" in result.stderr, result.stderr


def test_data_directory_and_store_files_are_owner_only(tmp_path):
    data = str(tmp_path / "fresh" / "data")

    def modes():
        found = {name: stat.S_IMODE(os.stat(os.path.join(data, name)).st_mode) for name in os.listdir(data)}
        return stat.S_IMODE(os.stat(data).st_mode), found

    # A permissive umask: the modes must come from herald, not from the test's umask.
    server = start_herald(data_dir=data, preexec_fn=lambda: os.umask(0o022))
    try:
        directory, files = modes()
    finally:
        assert server.stop() == 0
    assert directory == 0o700, oct(directory)
    for name in ("herald.sqlite", "herald.sqlite-wal", "herald.sqlite-shm", "herald.lock"):
        assert name in files, files
    assert all(mode & 0o077 == 0 for mode in files.values()), {k: oct(v) for k, v in files.items()}
    # Files an older version left 0644 are tightened at the next start; a
    # data directory open to others gets a warning.
    for name in os.listdir(data):
        os.chmod(os.path.join(data, name), 0o644)
    os.chmod(data, 0o755)
    server = start_herald(data_dir=data, preexec_fn=lambda: os.umask(0o022))
    try:
        _, files = modes()
    finally:
        assert server.stop() == 0
    tightened = {k: oct(v) for k, v in files.items() if k.startswith("herald.")}
    assert all(int(v, 8) & 0o077 == 0 for v in tightened.values()), tightened
    assert any("data directory is accessible by group or others" in line for line in server.stderr_lines)


def test_a_reload_refuses_a_tokens_file_made_readable_by_others(stubs, tmp_path):
    import signal as _signal

    tokens = tmp_path / "tokens"
    tokens.write_text(f"ops {OPS} *\n")
    os.chmod(tokens, 0o600)
    server = start_herald("--tokens-file", str(tokens))
    try:
        tokens.write_text(f"ops {OPS} *\nci {CI} com.example.app\n")
        os.chmod(tokens, 0o644)
        server.proc.send_signal(_signal.SIGHUP)
        deadline = time.monotonic() + 30
        while not any("reload failed" in line and str(tokens) in line for line in list(server.stderr_lines)):
            assert time.monotonic() < deadline, server.stderr_lines[-5:]
            assert server.proc.poll() is None
            time.sleep(0.02)
        # The old grants stay: ci's new token is not in force.
        with pytest.raises(grpc.RpcError) as err:
            status(stubs, server, CI)
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert status(stubs, server, OPS).version
    finally:
        assert server.stop() == 0
