"""Resource bounds of the gRPC engine (SPEC §7) against the real binary:
what a silent, slow, greedy or unauthenticated peer can hold, and for how long.

Every case runs `herald serve` with small limits so that each bound is reached
quickly, waits for the server's own answer (EOF, GOAWAY, a status) rather than
sleeping, and ends by proving the server still serves.
"""
from __future__ import annotations

import os
import socket
import struct
import time

import grpc
import h2.events
import pytest

from conftest import start_herald
from test_wire import EMPTY_FRAME, HEALTH_CHECK, TIMEOUT, Client, assert_serving

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
EMPTY_SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
RENDER = "/herald.v1.PushService/Render"
SCHEDULE = "/herald.v1.PushService/Schedule"


@pytest.fixture
def server(request):
    """`herald serve` with the flags of the test's `herald_args` mark."""
    mark = request.node.get_closest_marker("herald_args")
    proc = start_herald(*(mark.args if mark else ()))
    yield proc
    assert proc.stop() == 0


def read_until_eof(sock: socket.socket, limit: int = 1 << 20) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return received
        received += chunk
        assert len(received) < limit


def wait_for(client: Client, predicate, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        if not client.pump():
            break


# --- handshake, idle, keepalive, slow requests ---------------------------------

@pytest.mark.herald_args("--handshake-timeout", "0.3")
@pytest.mark.parametrize("opening", [b"", PREFACE[:10], PREFACE])
def test_peer_without_preface_and_settings_is_closed(server, opening):
    """Nothing, half a preface, or a preface without SETTINGS: closed at the
    handshake timeout (it would otherwise hold a descriptor for ever)."""
    sock = socket.create_connection((server.host, server.port), timeout=TIMEOUT)
    sock.sendall(opening)
    read_until_eof(sock)  # raises socket.timeout if the server never closes
    sock.close()
    assert_serving(server)


@pytest.mark.herald_args("--handshake-timeout", "0.3", "--keepalive-interval", "0.6")
def test_completed_handshake_is_not_cut(server):
    """The handshake timeout ends with the first SETTINGS: a client that
    handshakes and stays quiet past it is still served. (The server's first
    keepalive PING, due after the handshake timeout, marks the time passing.)"""
    client = Client(server.host, server.port)
    pinged = []
    original = client.handle
    client.handle = lambda event: (pinged.append(event) if isinstance(event, h2.events.PingReceived) else None,
                                   original(event))
    wait_for(client, lambda: pinged, "the keepalive PING")
    assert not client.eof
    assert client.call(HEALTH_CHECK, EMPTY_FRAME).grpc_status == 0
    client.close()


@pytest.mark.herald_args("--idle-timeout", "0.3")
def test_idle_connection_gets_goaway(server):
    client = Client(server.host, server.port)
    assert client.call(HEALTH_CHECK, EMPTY_FRAME).grpc_status == 0
    wait_for(client, lambda: client.terminated is not None or client.eof, "GOAWAY")
    assert client.terminated is not None, "closed without GOAWAY"
    assert client.terminated.error_code == 0  # NO_ERROR
    wait_for(client, lambda: client.eof, "the close after GOAWAY")
    client.sock.close()
    assert_serving(server)


@pytest.mark.herald_args("--keepalive-interval", "0.2", "--keepalive-timeout", "0.3")
def test_dead_peer_is_closed_after_unanswered_ping(server):
    """A peer that handshakes and then goes silent (never acks a PING) is
    closed after the keepalive timeout."""
    sock = socket.create_connection((server.host, server.port), timeout=TIMEOUT)
    sock.sendall(PREFACE + EMPTY_SETTINGS)
    received = read_until_eof(sock)
    sock.close()
    # Frames seen: SETTINGS, WINDOW_UPDATE, SETTINGS ack, and a PING (type 6).
    frame_types = []
    offset = 0
    while offset + 9 <= len(received):
        length = int.from_bytes(received[offset:offset + 3], "big")
        frame_types.append(received[offset + 3])
        offset += 9 + length
    assert 6 in frame_types, frame_types
    assert_serving(server)


@pytest.mark.herald_args("--keepalive-interval", "0.1", "--keepalive-timeout", "2")
def test_live_peer_answering_pings_stays_connected(server):
    client = Client(server.host, server.port)
    pings: list[h2.events.PingReceived] = []
    original = client.handle

    def handle(event):
        if isinstance(event, h2.events.PingReceived):
            pings.append(event)  # h2 acks it automatically
        original(event)

    client.handle = handle
    wait_for(client, lambda: len(pings) >= 3, "three keepalive PINGs")
    assert not client.eof
    assert client.call(HEALTH_CHECK, EMPTY_FRAME).grpc_status == 0
    client.close()


@pytest.mark.herald_args("--request-receive-timeout", "0.3")
def test_slow_request_ends_with_deadline_exceeded(server):
    """Slowloris: headers and part of a body, then nothing. The call ends, its
    buffer is freed, and the connection stays usable."""
    client = Client(server.host, server.port)
    stream_id = client.start(HEALTH_CHECK)
    client.send(stream_id, struct.pack(">BI", 0, 1000) + b"x" * 10)
    response = client.wait(stream_id)
    assert response.grpc_status == 4
    assert "request not received within" in response.headers.get("grpc-message", "")
    assert client.call(HEALTH_CHECK, EMPTY_FRAME).grpc_status == 0
    client.close()


# --- connection cap --------------------------------------------------------------

@pytest.mark.herald_args("--max-connections", "4")
def test_connections_over_the_cap_are_closed_and_slots_come_back(server):
    clients = [Client(server.host, server.port) for _ in range(4)]
    for client in clients:
        assert client.call(HEALTH_CHECK, EMPTY_FRAME).grpc_status == 0
    extra = socket.create_connection((server.host, server.port), timeout=TIMEOUT)
    extra.sendall(PREFACE + EMPTY_SETTINGS)
    try:
        assert read_until_eof(extra) == b""  # closed on accept, not a byte sent
    except ConnectionResetError:
        pass  # closed with our unread preface in its buffer: RST instead of FIN
    extra.close()
    for client in clients:
        client.close()
    wait_until_served(server)


def wait_until_served(server) -> None:
    """Slots are released when closed connections' close completes on the
    server; a new client is served once they are (bounded retries, each
    waiting on the server's answer)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        client = Client(server.host, server.port)
        try:
            if client.call(HEALTH_CHECK, EMPTY_FRAME).grpc_status == 0:
                return
        except (ConnectionError, KeyError, OSError):
            pass
        finally:
            client.sock.close()
        assert time.monotonic() < deadline, "slots never came back"


def test_connection_flood_at_the_descriptor_limit_does_not_stop_delivery(stubs, tmp_path):
    """With 256 descriptors and 300 clients holding connections, new clients
    are refused at the cap (fitted under the limit), Health answers, and the
    APNs client still opens its connection: a due message is delivered."""
    import resource

    from test_delivery import EN_TOKEN, Client as DeliveryClient, Record, with_key

    record = tmp_path / "deliveries.jsonl"
    proc = start_herald("--grace-seconds", "0", "--sim-record", str(record),
                        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256)))
    held = []
    try:
        for _ in range(300):
            sock = socket.create_connection((proc.host, proc.port), timeout=TIMEOUT)
            sock.sendall(PREFACE + EMPTY_SETTINGS)
            held.append(sock)
        # Each is either served (the server's SETTINGS arrive) or refused at
        # the cap (closed): wait for every answer, so that none is still in
        # the accept queue to take a freed slot.
        accepted = []
        for sock in held:
            try:
                if sock.recv(9):
                    accepted.append(sock)
            except ConnectionResetError:
                pass
        assert 100 <= len(accepted) < 256, len(accepted)
        for sock in accepted[:20]:  # make room for the test's own connections
            sock.close()
        wait_until_served(proc)
        client = DeliveryClient(stubs, proc.address)
        client.register("flood-user", EN_TOKEN, "en")
        client.schedule("flood-user", "flood-1")
        Record(str(record)).wait_for(with_key("flood-1"))
        client.channel.close()
    finally:
        for sock in held:
            sock.close()
    assert proc.proc.poll() is None
    assert proc.stop() == 0


# --- request buffer budgets ------------------------------------------------------

def start_partial(client: Client, path: str, declared: int, send: int) -> int:
    """A call whose message declares `declared` bytes, of which `send` are sent
    (respecting flow control), with no END_STREAM."""
    stream_id = client.start(path)
    client.send(stream_id, struct.pack(">BI", 0, declared))
    client.send_flow_controlled(stream_id, b"\x00" * send)
    return stream_id


def health_call_with_ping(client: Client) -> None:
    """Proves the connection's earlier frames were all processed."""
    assert client.call(HEALTH_CHECK, EMPTY_FRAME).grpc_status == 0


@pytest.mark.herald_args("--max-buffered-request-mib", "5", "--max-connection-buffer-mib", "4")
def test_global_request_buffer_budget(server):
    """Three connections each holding 2 MiB of an unfinished body (Render:
    an admitted method; Health takes 64 KiB at most): the third goes over the
    server's 5 MiB and gets RESOURCE_EXHAUSTED naming the limit; closing one
    gives its bytes back."""
    mib = 1 << 20
    first, second, third = (Client(server.host, server.port) for _ in range(3))
    a = start_partial(first, RENDER, 4 * mib, 2 * mib)
    health_call_with_ping(first)
    b = start_partial(second, RENDER, 4 * mib, 2 * mib)
    health_call_with_ping(second)
    assert not first.streams[a].done and not second.streams[b].done
    c = start_partial(third, RENDER, 4 * mib, 2 * mib)
    response = third.wait(c)
    assert response.grpc_status == 8
    assert "server request buffer limit of 5242880 bytes" in response.headers["grpc-message"]
    assert_serving(server)
    # Closing the first connection frees its 2 MiB: the same request fits now.
    first.close()
    deadline = time.monotonic() + TIMEOUT
    while True:
        fourth = Client(server.host, server.port)
        d = start_partial(fourth, RENDER, 4 * mib, 2 * mib)
        health_call_with_ping(fourth)
        if not fourth.streams[d].done:
            break
        assert fourth.streams[d].grpc_status == 8
        fourth.close()
        assert time.monotonic() < deadline, "the closed connection's bytes never came back"
    for client in (second, third, fourth):
        client.close()


@pytest.mark.herald_args("--max-buffered-request-mib", "64", "--max-connection-buffer-mib", "4")
def test_per_connection_request_buffer_budget(server):
    mib = 1 << 20
    client = Client(server.host, server.port)
    a = start_partial(client, RENDER, 4 * mib, 3 * mib)
    b = start_partial(client, RENDER, 4 * mib, 3 * mib)
    response = client.wait(b)
    assert response.grpc_status == 8
    assert "connection request buffer limit of 4194304 bytes" in response.headers["grpc-message"]
    assert not client.streams[a].done
    health_call_with_ping(client)
    client.close()
    assert_serving(server)


# --- authentication before the body ------------------------------------------------

@pytest.fixture
def secured(tmp_path):
    path = tmp_path / "tokens"
    path.write_text("ci ci-token-0123456789abcdef com.example.app\n")
    os.chmod(path, 0o600)
    proc = start_herald("--tokens-file", str(path))
    yield proc
    assert proc.stop() == 0


@pytest.mark.parametrize("path", [RENDER, SCHEDULE])
def test_unauthenticated_call_is_refused_before_its_body(secured, path):
    """No token: UNAUTHENTICATED as soon as the headers arrive, while the body
    is still unsent (it is never buffered)."""
    client = Client(secured.host, secured.port)
    stream_id = client.start(path)
    client.send(stream_id, struct.pack(">BI", 0, 4 << 20) + b"\x00" * 1000)  # far from complete
    response = client.wait(stream_id)
    assert response.grpc_status == 16
    assert response.trailers_only
    client.close()
    assert_serving(secured)


# --- status messages -----------------------------------------------------------------

@pytest.mark.parametrize("size", [17_000, 64_000, 1_000_000])
def test_huge_echoed_input_gives_the_real_status(stubs, server, size):
    """A Health service name of 17 KB+ used to make grpc-message too large for
    grpcio (RESOURCE_EXHAUSTED) or for nghttp2 (no answer at all)."""
    with grpc.insecure_channel(server.address, options=[("grpc.max_send_message_length", 8 << 20)]) as channel:
        health = stubs.HealthStub(channel)
        with pytest.raises(grpc.RpcError) as failure:
            health.Check(stubs.health_pb2.HealthCheckRequest(service="s" * size), timeout=TIMEOUT)
        if size > 4 << 20:
            return
        if size > 65536:  # Health is callable without a token: 64 KiB messages at most
            assert failure.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, failure.value.details()
            assert "limit of 65536 bytes" in failure.value.details()
            return
        assert failure.value.code() == grpc.StatusCode.NOT_FOUND, failure.value.details()
        assert len(failure.value.details().encode()) <= 1024
    assert server.proc.poll() is None
    assert_serving(server)


# --- large CPU-bound calls leave the loop --------------------------------------------

def test_large_render_runs_off_the_loop_and_answers(stubs, server):
    """A Render above the inline size (16 KiB) runs on the compute threads: the
    answer is the same as inline."""
    t = stubs.types_pb2
    from google.protobuf import struct_pb2

    android = struct_pb2.Struct()
    android.update({f"k{i}": "v" * 20 for i in range(800)})  # ~20 KB, unused for iOS
    small = stubs.push_pb2.RenderRequest(
        bundle_id="com.example.app", platform=t.PLATFORM_IOS, locale="en", idempotency_key="large-render",
        content=t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="There")))
    large = stubs.push_pb2.RenderRequest()
    large.CopyFrom(small)
    large.android.CopyFrom(android)
    assert large.ByteSize() > 16 * 1024
    with grpc.insecure_channel(server.address) as channel:
        push = stubs.push_pb2_grpc.PushServiceStub(channel)
        inline = push.Render(small, timeout=TIMEOUT)
        offloaded = push.Render(large, timeout=TIMEOUT)
    assert offloaded.apns.payload_json == inline.apns.payload_json
    assert offloaded.apns.path == inline.apns.path
