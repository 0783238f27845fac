"""Wire-level tests of the gRPC engine against the real `herald serve`.

Each case speaks raw HTTP/2 (the `h2` library over a plain socket) to provoke
one edge of the protocol, then proves the server still serves with a fresh
grpc.health.v1.Health/Check call.
"""
from __future__ import annotations

import gzip
import socket
import struct
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
import pytest

HEALTH_CHECK = "/grpc.health.v1.Health/Check"
# HealthCheckRequest{service: ""} is the empty message; SERVING is `08 01`.
EMPTY_FRAME = b"\x00\x00\x00\x00\x00"
SERVING_FRAME = b"\x00\x00\x00\x00\x02\x08\x01"
TIMEOUT = 10.0


def frame(message: bytes, compressed: bool = False) -> bytes:
    return struct.pack(">BI", 1 if compressed else 0, len(message)) + message


class Stream:
    def __init__(self) -> None:
        self.headers: dict[str, str] | None = None
        self.trailers: dict[str, str] | None = None
        self.data = b""
        self.ended = False
        self.reset: int | None = None
        self.frames_with_data = 0

    @property
    def done(self) -> bool:
        return self.ended or self.reset is not None

    @property
    def grpc_status(self) -> int | None:
        for block in (self.trailers, self.headers):
            if block and "grpc-status" in block:
                return int(block["grpc-status"])
        return None

    @property
    def trailers_only(self) -> bool:
        """One HEADERS frame with END_STREAM carrying grpc-status, no DATA."""
        return (self.headers is not None and "grpc-status" in self.headers
                and self.trailers is None and self.data == b"")


class Client:
    """A minimal h2c prior-knowledge client over a blocking socket."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=TIMEOUT)
        self.conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.streams: dict[int, Stream] = {}
        self.terminated: h2.events.ConnectionTerminated | None = None
        self.remote_settings: dict[int, int] = {}
        self.eof = False
        self.flush()

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def start(self, path: str, content_type: str = "application/grpc",
              extra: list[tuple[str, str]] | None = None, end_stream: bool = False) -> int:
        stream_id = self.conn.get_next_available_stream_id()
        headers = [(":method", "POST"), (":scheme", "http"), (":path", path),
                   (":authority", "localhost"), ("content-type", content_type), ("te", "trailers")]
        headers += extra or []
        self.conn.send_headers(stream_id, headers, end_stream=end_stream)
        self.streams[stream_id] = Stream()
        return stream_id

    def send(self, stream_id: int, data: bytes, end_stream: bool = False) -> None:
        self.conn.send_data(stream_id, data, end_stream=end_stream)
        self.flush()

    def send_flow_controlled(self, stream_id: int, payload: bytes, end_stream: bool = False) -> None:
        """Sends `payload` as the peer's flow-control windows allow (reading
        its WINDOW_UPDATEs in between); stops early if the stream ends."""
        sent = 0
        deadline = time.monotonic() + TIMEOUT
        while sent < len(payload) and not self.streams[stream_id].done:
            assert time.monotonic() < deadline, "timed out waiting for flow-control window"
            window = min(self.conn.local_flow_control_window(stream_id), self.conn.max_outbound_frame_size)
            if window > 0:
                chunk = payload[sent:sent + window]
                sent += len(chunk)
                self.send(stream_id, chunk, end_stream=end_stream and sent == len(payload))
            else:
                self.pump()

    def call(self, path: str, body: bytes, **kwargs) -> Stream:
        stream_id = self.start(path, **kwargs)
        self.send(stream_id, body, end_stream=True)
        return self.wait(stream_id)

    def pump(self) -> bool:
        """Reads once and handles events; False on EOF."""
        data = self.sock.recv(65536)
        if not data:
            self.eof = True
            return False
        for event in self.conn.receive_data(data):
            self.handle(event)
        self.flush()
        return True

    def handle(self, event) -> None:
        stream = self.streams.get(getattr(event, "stream_id", 0) or 0)
        if isinstance(event, h2.events.ResponseReceived):
            stream.headers = dict(event.headers)
        elif isinstance(event, h2.events.TrailersReceived):
            stream.trailers = dict(event.headers)
        elif isinstance(event, h2.events.DataReceived):
            stream.data += event.data
            stream.frames_with_data += 1
            self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            stream.ended = True
        elif isinstance(event, h2.events.StreamReset):
            if stream is not None:
                stream.reset = event.error_code
        elif isinstance(event, h2.events.RemoteSettingsChanged):
            for code, change in event.changed_settings.items():
                self.remote_settings[int(code)] = change.new_value
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.terminated = event

    def wait(self, stream_id: int) -> Stream:
        deadline = time.monotonic() + TIMEOUT
        while not self.streams[stream_id].done:
            assert time.monotonic() < deadline, "timed out waiting for the response"
            if not self.pump():
                break
        return self.streams[stream_id]

    def close(self) -> None:
        try:
            self.conn.close_connection()
            self.flush()
        except (OSError, h2.exceptions.ProtocolError):
            pass
        self.sock.close()


def assert_serving(herald) -> None:
    """A good Health/Check on a fresh connection: the server still serves."""
    client = Client(herald.host, herald.port)
    try:
        response = client.call(HEALTH_CHECK, EMPTY_FRAME)
        assert response.headers[":status"] == "200"
        assert response.grpc_status == 0, response.trailers
        assert response.data == SERVING_FRAME
    finally:
        client.close()


def test_health_check_and_settings(herald):
    client = Client(herald.host, herald.port)
    response = client.call(HEALTH_CHECK, EMPTY_FRAME)
    assert response.headers["content-type"].startswith("application/grpc")
    assert response.data == SERVING_FRAME
    assert response.trailers == {"grpc-status": "0"}
    assert client.remote_settings[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS] == 100
    # Several calls multiplexed on one connection.
    ids = [client.start(HEALTH_CHECK) for _ in range(20)]
    for stream_id in ids:
        client.send(stream_id, EMPTY_FRAME, end_stream=True)
    for stream_id in ids:
        assert client.wait(stream_id).data == SERVING_FRAME
    client.close()
    assert_serving(herald)


@pytest.mark.parametrize("content_type", ["text/plain", "application/grpcx"])
def test_non_grpc_content_type_is_415(herald, content_type):
    client = Client(herald.host, herald.port)
    response = client.call(HEALTH_CHECK, EMPTY_FRAME, content_type=content_type)
    assert response.headers[":status"] == "415"
    client.close()
    assert_serving(herald)


def test_json_content_type_is_connect(herald):
    """application/json is the Connect protocol's (SPEC §8): a gRPC frame as its
    body is not JSON (a Connect error, 400); on a path no service has, still 415."""
    client = Client(herald.host, herald.port)
    response = client.call(HEALTH_CHECK, EMPTY_FRAME, content_type="application/json")
    assert response.headers[":status"] == "400"
    assert response.headers["content-type"] == "application/json"
    assert b'"code":"invalid_argument"' in response.data
    response = client.call("/no.such.Service/Method", EMPTY_FRAME, content_type="application/json")
    assert response.headers[":status"] == "415"
    client.close()
    assert_serving(herald)


@pytest.mark.parametrize("content_type", ["application/grpc+proto", "application/grpc; charset=utf-8"])
def test_grpc_content_type_variants_accepted(herald, content_type):
    client = Client(herald.host, herald.port)
    response = client.call(HEALTH_CHECK, EMPTY_FRAME, content_type=content_type)
    assert response.grpc_status == 0
    client.close()


@pytest.mark.parametrize("path", ["/herald.v1.PushService/NoSuchMethod", "/no.Such/Service", "/"])
def test_unknown_method_is_unimplemented(herald, path):
    client = Client(herald.host, herald.port)
    response = client.call(path, EMPTY_FRAME)
    assert response.headers[":status"] == "200"
    assert response.grpc_status == 12
    assert response.trailers_only
    client.close()
    assert_serving(herald)


def test_oversized_message_is_resource_exhausted(herald):
    """A 5 MiB message: RESOURCE_EXHAUSTED once the prefix is seen, before the body."""
    client = Client(herald.host, herald.port)
    stream_id = client.start(HEALTH_CHECK)
    size = 5 * 1024 * 1024
    client.send(stream_id, struct.pack(">BI", 0, size))
    client.send_flow_controlled(stream_id, b"x" * size, end_stream=True)
    response = client.wait(stream_id)
    assert response.grpc_status == 8
    assert "exceeds" in response.headers.get("grpc-message", "")
    client.close()
    assert_serving(herald)


@pytest.mark.parametrize("body", [
    struct.pack(">BI", 0, 10) + b"abc",   # body cut short
    b"\x00\x00\x00",                       # prefix cut short
])
def test_truncated_message_is_an_error(herald, body):
    client = Client(herald.host, herald.port)
    response = client.call(HEALTH_CHECK, body)
    assert response.grpc_status == 13
    client.close()
    assert_serving(herald)


@pytest.mark.parametrize("extra", [[], [("grpc-encoding", "identity")], [("grpc-encoding", "deflate")]])
def test_compressed_flag_without_supported_encoding_is_unimplemented(herald, extra):
    client = Client(herald.host, herald.port)
    response = client.call(HEALTH_CHECK, frame(gzip.compress(b""), compressed=True), extra=extra)
    assert response.grpc_status == 12
    assert response.headers.get("grpc-accept-encoding") == "identity,gzip"
    client.close()
    assert_serving(herald)


def test_gzip_request_is_inflated(herald):
    client = Client(herald.host, herald.port)
    body = frame(gzip.compress(b""), compressed=True)  # HealthCheckRequest{} gzip-compressed
    response = client.call(HEALTH_CHECK, body, extra=[("grpc-encoding", "gzip")])
    assert response.grpc_status == 0
    assert response.data == frame(b"\x08\x01")  # SERVING, sent uncompressed
    client.close()


@pytest.mark.parametrize("payload,status", [
    (gzip.compress(b"\x00" * (5 << 20)), 8),      # a 5 MiB bomb in a few KiB: RESOURCE_EXHAUSTED
    (b"\x1f\x8b\x08\x00garbage", 13),              # not gzip: INTERNAL
    (gzip.compress(b"") + b"tail", 13),            # trailing bytes
])
def test_bad_gzip_is_refused(herald, payload, status):
    client = Client(herald.host, herald.port)
    response = client.call(HEALTH_CHECK, frame(payload, compressed=True), extra=[("grpc-encoding", "gzip")])
    assert response.grpc_status == status
    client.close()
    assert_serving(herald)


@pytest.mark.parametrize("body", [b"", frame(b"") + frame(b"")])
def test_unary_needs_exactly_one_message(herald, body):
    client = Client(herald.host, herald.port)
    response = client.call(HEALTH_CHECK, body)
    assert response.grpc_status == 12
    client.close()
    assert_serving(herald)


def test_custom_and_binary_metadata_accepted(herald):
    client = Client(herald.host, herald.port)
    response = client.call(HEALTH_CHECK, EMPTY_FRAME,
                           extra=[("x-request-id", "abc"), ("x-trace-bin", "AAECAw=="), ("grpc-timeout", "5S")])
    assert response.grpc_status == 0
    client.close()


def test_oversized_header_list_is_rejected(herald):
    client = Client(herald.host, herald.port)
    extra = [(f"x-big-{i}", "v" * 1000) for i in range(20)]  # ~20 KiB > 16 KiB
    response = client.call(HEALTH_CHECK, EMPTY_FRAME, extra=extra)
    assert response.grpc_status == 8
    client.close()
    assert_serving(herald)


@pytest.mark.parametrize("value", ["", "123456789S", "1x", "-1S"])
def test_bad_grpc_timeout_is_invalid_argument(herald, value):
    client = Client(herald.host, herald.port)
    response = client.call(HEALTH_CHECK, EMPTY_FRAME, extra=[("grpc-timeout", value)])
    assert response.grpc_status == 3
    client.close()


@pytest.mark.parametrize("garbage", [
    b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
    b"\x00" * 64,
    bytes(range(256)) * 4,
])
def test_garbage_instead_of_preface_closes_cleanly(herald, garbage):
    sock = socket.create_connection((herald.host, herald.port), timeout=TIMEOUT)
    sock.sendall(garbage)
    received = b""
    while True:  # the server closes the connection: recv reaches EOF
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
        assert len(received) < 1 << 20
    sock.close()
    assert_serving(herald)


def test_rst_stream_mid_request(herald):
    client = Client(herald.host, herald.port)
    stream_id = client.start(HEALTH_CHECK)
    client.send(stream_id, struct.pack(">BI", 0, 100) + b"partial")
    client.conn.reset_stream(stream_id, error_code=8)  # CANCEL
    client.flush()
    # The same connection keeps working; the cancelled stream got no response.
    response = client.call(HEALTH_CHECK, EMPTY_FRAME)
    assert response.data == SERVING_FRAME
    assert client.streams[stream_id].headers is None
    client.close()
    assert_serving(herald)


def test_thousand_streams_at_once(herald):
    """1000 streams opened before the server's SETTINGS are read: the ones beyond
    SETTINGS_MAX_CONCURRENT_STREAMS are refused (REFUSED_STREAM), the rest answered."""
    client = Client(herald.host, herald.port)
    ids = []
    for _ in range(1000):
        stream_id = client.start(HEALTH_CHECK)
        client.conn.send_data(stream_id, EMPTY_FRAME, end_stream=True)
        ids.append(stream_id)
    client.flush()
    deadline = time.monotonic() + 30
    while not all(client.streams[i].done for i in ids):
        assert time.monotonic() < deadline, "streams left unanswered"
        assert client.pump(), "server closed the connection"
    answered = [i for i in ids if client.streams[i].reset is None]
    refused = [i for i in ids if client.streams[i].reset is not None]
    assert len(answered) >= 100
    assert refused, "streams beyond the limit must be refused"
    assert all(client.streams[i].reset == 7 for i in refused)  # REFUSED_STREAM
    assert all(client.streams[i].grpc_status == 0 and client.streams[i].data == SERVING_FRAME for i in answered)
    client.close()
    assert_serving(herald)


def test_graceful_shutdown_sends_goaway_and_exits_zero(herald):
    client = Client(herald.host, herald.port)
    assert client.call(HEALTH_CHECK, EMPTY_FRAME).grpc_status == 0
    herald.proc.send_signal(15)
    deadline = time.monotonic() + TIMEOUT
    while client.terminated is None and not client.eof:
        assert time.monotonic() < deadline
        if not client.pump():
            break
    assert client.terminated is not None and client.terminated.error_code == 0
    assert herald.proc.wait(timeout=TIMEOUT) == 0
    client.sock.close()


@pytest.mark.parametrize("method,path", [("GET", HEALTH_CHECK), ("PUT", HEALTH_CHECK)])
def test_non_post_method_is_405(herald, method, path):
    client = Client(herald.host, herald.port)
    stream_id = client.conn.get_next_available_stream_id()
    client.conn.send_headers(stream_id, [(":method", method), (":scheme", "http"), (":path", path),
                                         (":authority", "localhost"), ("content-type", "application/grpc")],
                             end_stream=True)
    client.streams[stream_id] = Stream()
    client.flush()
    response = client.wait(stream_id)
    assert response.headers[":status"] == "405"
    client.close()
    assert_serving(herald)


def test_deadline_already_expired_is_deadline_exceeded(herald):
    client = Client(herald.host, herald.port)
    response = client.call(HEALTH_CHECK, EMPTY_FRAME, extra=[("grpc-timeout", "0n")])
    assert response.grpc_status == 4
    client.close()
    assert_serving(herald)


def test_invalid_message_flags_is_internal(herald):
    client = Client(herald.host, herald.port)
    response = client.call(HEALTH_CHECK, b"\x02\x00\x00\x00\x00")
    assert response.grpc_status == 13
    client.close()
    assert_serving(herald)


def test_grpc_message_is_percent_encoded(herald):
    client = Client(herald.host, herald.port)
    # (nghttp2 itself refuses spaces and non-ASCII in :path with RST_STREAM.)
    response = client.call("/no.Such/100%Method", EMPTY_FRAME)
    assert response.grpc_status == 12
    message = response.headers["grpc-message"]
    assert all(0x20 <= ord(c) <= 0x7E for c in message)
    assert message.endswith("/no.Such/100%25Method")
    client.close()


def test_rapid_reset_flood_is_contained(herald):
    """CVE-2023-44487 pattern: HEADERS + RST_STREAM in a tight loop. nghttp2's
    stream-reset rate limit answers with GOAWAY; the server keeps serving others."""
    client = Client(herald.host, herald.port)
    for _ in range(3000):
        stream_id = client.start(HEALTH_CHECK)
        client.conn.reset_stream(stream_id, error_code=8)
    try:
        client.flush()
        deadline = time.monotonic() + TIMEOUT
        while client.terminated is None and time.monotonic() < deadline:
            if not client.pump():
                break
    except (ConnectionResetError, BrokenPipeError, h2.exceptions.ProtocolError):
        pass
    assert client.terminated is not None or client.eof
    client.sock.close()
    assert_serving(herald)


def test_ping_flood_without_reading_is_contained(herald):
    """Thousands of PINGs whose ACKs are never read: nghttp2's outbound-ACK limit
    ends the connection instead of queueing without bound."""
    sock = socket.create_connection((herald.host, herald.port), timeout=TIMEOUT)
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
    ping = b"\x00\x00\x08\x06\x00\x00\x00\x00\x00" + b"\x00" * 8
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    closed = False
    try:
        sock.sendall(preface)
        for _ in range(200):
            sock.sendall(ping * 100)
    except (ConnectionResetError, BrokenPipeError):
        closed = True
    if not closed:
        try:
            while sock.recv(65536):
                pass
        except (ConnectionResetError, socket.timeout):
            pass
    sock.close()
    assert_serving(herald)
