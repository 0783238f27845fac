"""Limits against unauthenticated clients (SPEC §7, added 2026-11-27; issue 24
item 3) against the real binary: Health, Status and reflection take small
messages from their own buffer budget, Watch/reflection streams are bounded
in number and age, and one peer address holds a bounded number of
connections. Each case is the attacker's; every wait is on the server's
answer, bounded by TIMEOUT.
"""
from __future__ import annotations

import socket
import struct

import h2.config
import h2.connection
import pytest

from conftest import start_herald
from test_bounds import RENDER, read_until_eof, start_partial
from test_wire import EMPTY_FRAME, HEALTH_CHECK, TIMEOUT, Client, assert_serving, frame

WATCH = "/grpc.health.v1.Health/Watch"
STATUS = "/herald.v1.PushService/Status"
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
EMPTY_SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


@pytest.fixture
def server(request):
    mark = request.node.get_closest_marker("herald_args")
    proc = start_herald(*(mark.args if mark else ()))
    yield proc
    assert proc.stop() == 0


class SourcedClient(Client):
    """`Client` whose socket is bound to `source` first (127.0.0.2 is another
    peer address to the server, on the same loopback interface)."""

    def __init__(self, host: str, port: int, source: str) -> None:
        self.sock = socket.create_connection((host, port), timeout=TIMEOUT, source_address=(source, 0))
        self.conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.streams = {}
        self.terminated = None
        self.remote_settings = {}
        self.eof = False
        self.flush()


@pytest.mark.parametrize("path", [HEALTH_CHECK, STATUS])
def test_oversized_unauthenticated_message_is_resource_exhausted(server, path):
    """A 1 MiB message to a method callable without a token: refused from its
    5-byte prefix, naming the 64 KiB limit."""
    client = Client(server.host, server.port)
    stream_id = client.start(path)
    client.send(stream_id, struct.pack(">BI", 0, 1 << 20) + b"\x00" * 1000)
    response = client.wait(stream_id)
    assert response.grpc_status == 8
    assert "limit of 65536 bytes for methods callable without a token" in response.headers["grpc-message"]
    client.close()
    assert_serving(server)


@pytest.mark.herald_args("--unauthenticated-buffer-kib", "128")
def test_slow_unauthenticated_bodies_leave_the_admitted_budget_alone(server):
    """Connections holding unfinished 60 KB Health bodies fill the 128 KiB
    budget of unauthenticated calls and the next is refused; meanwhile a
    Render (admitted) holding 2 MiB and a whole Health call are served."""
    holders = [Client(server.host, server.port) for _ in range(2)]
    for client in holders:
        sid = start_partial(client, HEALTH_CHECK, 60_000, 59_000)
        assert client.call(HEALTH_CHECK, EMPTY_FRAME).grpc_status == 0  # processed in order: held
        assert not client.streams[sid].done
    third = Client(server.host, server.port)
    sid = start_partial(third, HEALTH_CHECK, 60_000, 59_000)
    response = third.wait(sid)
    assert response.grpc_status == 8
    assert "131072 bytes for methods callable without a token" in response.headers["grpc-message"]
    admitted = Client(server.host, server.port)
    big = start_partial(admitted, RENDER, 4 << 20, 2 << 20)
    assert admitted.call(HEALTH_CHECK, EMPTY_FRAME).grpc_status == 0
    assert not admitted.streams[big].done, "the admitted call holds its 2 MiB"
    for client in holders + [third, admitted]:
        client.close()
    assert_serving(server)


@pytest.mark.herald_args("--max-connections-per-peer", "2")
def test_one_peer_past_its_connection_cap_is_refused_another_connects(server):
    clients = [Client(server.host, server.port) for _ in range(2)]
    for client in clients:
        assert client.call(HEALTH_CHECK, EMPTY_FRAME).grpc_status == 0
    extra = socket.create_connection((server.host, server.port), timeout=TIMEOUT)
    extra.sendall(PREFACE + EMPTY_SETTINGS)
    try:
        assert read_until_eof(extra) == b""  # closed on accept
    except ConnectionResetError:
        pass
    extra.close()
    other = SourcedClient(server.host, server.port, "127.0.0.2")
    assert other.call(HEALTH_CHECK, EMPTY_FRAME).grpc_status == 0, "another address still connects"
    other.close()
    for client in clients:
        client.close()


@pytest.mark.herald_args("--unauthenticated-streams-per-connection", "2")
def test_watch_streams_past_the_bound_are_refused(server):
    client = Client(server.host, server.port)
    watches = [client.start(WATCH) for _ in range(2)]
    for sid in watches:
        client.send(sid, EMPTY_FRAME, end_stream=True)
    while not all(client.streams[s].data for s in watches):
        assert client.pump()  # each read bounded by the socket's TIMEOUT
    extra = client.start(WATCH)
    client.send(extra, EMPTY_FRAME, end_stream=True)
    response = client.wait(extra)
    assert response.grpc_status == 8
    assert "(unauthenticatedMaxStreamsPerConnection)" in response.headers["grpc-message"]
    assert client.call(HEALTH_CHECK, EMPTY_FRAME).grpc_status == 0
    client.close()


@pytest.mark.herald_args("--unauthenticated-stream-max-age", "0.5")
def test_watch_stream_past_its_age_is_ended(server):
    client = Client(server.host, server.port)
    response = client.call(WATCH, frame(b""))
    assert response.data.startswith(b"\x00\x00\x00\x00\x02\x08\x01")  # SERVING first
    assert response.grpc_status == 14
    assert "maximum age" in response.trailers["grpc-message"]
    assert client.call(HEALTH_CHECK, EMPTY_FRAME).grpc_status == 0
    client.close()


@pytest.mark.herald_args("--idle-timeout", "0.5")
def test_watch_alone_does_not_keep_a_connection_open(server):
    """A Watch is no activity: the idle timeout ends it (UNAVAILABLE), then
    GOAWAY and close."""
    client = Client(server.host, server.port)
    response = client.call(WATCH, frame(b""))
    assert response.grpc_status == 14
    while client.terminated is None and not client.eof:
        assert client.pump() or client.eof
    assert client.terminated is not None
    client.sock.close()


# --- the settings: flag, environment, config file ------------------------------

@pytest.mark.parametrize("key,value,needle", [
    ("max-connections-per-peer", "-1", "must not be negative"),
    ("unauthenticated-max-message-bytes", "0", "1...4194304"),
    ("unauthenticated-max-message-bytes", "5000000", "1...4194304"),
    ("unauthenticated-buffer-kib", "0", "1...1048576"),
    ("unauthenticated-streams-per-connection", "0", "at least 1"),
    ("unauthenticated-streams", "0", "at least 1"),
    ("unauthenticated-stream-max-age", "0", "86400"),
])
def test_a_bad_bound_is_refused_from_each_layer(tmp_path, key, value, needle):
    from test_config_strict import one_error_line, run_serve

    data = str(tmp_path / "data")
    error = one_error_line(run_serve([f"--{key}={value}", "--data-dir", data]))
    assert f"--{key}" in error and needle in error, error
    env = "HERALD_" + key.upper().replace("-", "_")
    error = one_error_line(run_serve(["--data-dir", data], env={env: value}))
    assert env in error and needle in error, error
    config = tmp_path / "herald.conf"
    config.write_text(f"{key} = {value}\n")
    error = one_error_line(run_serve(["--config", str(config), "--data-dir", data]))
    assert f"{config}:1: {key}" in error and needle in error, error


def test_bounds_from_the_environment_and_the_config_file_apply(tmp_path, monkeypatch):
    config = tmp_path / "herald.conf"
    config.write_text("unauthenticated-max-message-bytes = 1000\n")
    monkeypatch.setenv("HERALD_MAX_CONNECTIONS_PER_PEER", "1")
    proc = start_herald("--config", str(config))
    try:
        client = Client(proc.host, proc.port)
        response = client.call(HEALTH_CHECK, frame(b"\x0a\x82\x10" + b"s" * 2050))
        assert response.grpc_status == 8
        assert "limit of 1000 bytes" in response.headers["grpc-message"]
        extra = socket.create_connection((proc.host, proc.port), timeout=TIMEOUT)
        extra.sendall(PREFACE + EMPTY_SETTINGS)
        try:
            assert read_until_eof(extra) == b"", "a second connection from 127.0.0.1 is refused"
        except ConnectionResetError:
            pass
        extra.close()
        client.close()
    finally:
        assert proc.stop() == 0
