"""Interop: an independent HTTP/2 client (python-h2 over ssl, ALPN h2) against
`herald apns-sim` started from the built binary. JWTs are signed ES256 with the
`cryptography` package and verified by the simulator (--public-key)."""
from __future__ import annotations

import base64
import json
import os
import pathlib
import re
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import uuid

import h2.config
import h2.connection
import h2.events
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

ROOT = pathlib.Path(__file__).resolve().parents[2]
LISTENING = re.compile(r"listening on (\S+):(\d+)")
KEY_ID = "ABC123DEFG"
TEAM_ID = "DEF123GHIJ"
TOPIC = "com.example.app"
TOKEN = "ab" * 32


def herald_binary() -> str:
    path = os.environ.get("HERALD_BIN", str(ROOT / ".build" / "debug" / "herald"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"herald binary not found at {path}: run `swift build` first")
    return path


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def make_jwt(key: ec.EllipticCurvePrivateKey, iat: int, kid: str = KEY_ID, iss: str = TEAM_ID) -> str:
    header = b64url(json.dumps({"alg": "ES256", "kid": kid}, separators=(",", ":")).encode())
    claims = b64url(json.dumps({"iss": iss, "iat": iat}, separators=(",", ":")).encode())
    signing_input = f"{header}.{claims}".encode()
    r, s = decode_dss_signature(key.sign(signing_input, ec.ECDSA(hashes.SHA256())))
    return f"{header}.{claims}.{b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


class Simulator:
    def __init__(self, tmp: pathlib.Path, key: ec.EllipticCurvePrivateKey):
        public = tmp / "pub.pem"
        public.write_bytes(key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        self.ca = tmp / "ca.pem"
        cmd = [herald_binary(), "apns-sim", "--port", "0", "--ca-out", str(self.ca),
               "--public-key", str(public), "--key-id", KEY_ID, "--team-id", TEAM_ID,
               "--topics", TOPIC, "--unregistered", f"{'cd' * 32}:1700000000123"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self.stderr: list[str] = []
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()
        line = self.proc.stdout.readline()
        match = LISTENING.search(line or "")
        if not match:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"apns-sim did not report its port: {line!r} {''.join(self.stderr)}")
        self.host, self.port = match.group(1), int(match.group(2))

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("apns-sim did not exit on SIGTERM")


class H2Client:
    """A minimal blocking HTTP/2 client over TLS with ALPN h2."""

    def __init__(self, sim: Simulator):
        context = ssl.create_default_context(cafile=str(sim.ca))
        context.set_alpn_protocols(["h2"])
        raw = socket.create_connection((sim.host, sim.port), timeout=10)
        self.sock = context.wrap_socket(raw, server_hostname="localhost")
        assert self.sock.selected_alpn_protocol() == "h2"
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.sock.sendall(self.conn.data_to_send())
        self.max_streams = None

    def request(self, headers: list[tuple[str, str]], body: bytes, method: str = "POST",
                path: str = f"/3/device/{TOKEN}") -> tuple[int, dict[str, str], bytes]:
        stream_id = self.conn.get_next_available_stream_id()
        all_headers = [(":method", method), (":scheme", "https"), (":authority", "localhost"), (":path", path)]
        self.conn.send_headers(stream_id, all_headers + headers, end_stream=not body)
        if body:
            self.conn.send_data(stream_id, body, end_stream=True)
        self.sock.sendall(self.conn.data_to_send())
        response_headers: dict[str, str] = {}
        data = b""
        for _ in range(1000):
            chunk = self.sock.recv(65536)
            if not chunk:
                raise AssertionError("connection closed")
            for event in self.conn.receive_data(chunk):
                if isinstance(event, h2.events.RemoteSettingsChanged):
                    setting = event.changed_settings.get(h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS)
                    if setting is not None:
                        self.max_streams = setting.new_value
                elif isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream_id:
                    response_headers = dict(event.headers)
                elif isinstance(event, h2.events.DataReceived) and event.stream_id == stream_id:
                    data += event.data
                    self.conn.acknowledge_received_data(event.flow_controlled_length, stream_id)
                elif isinstance(event, h2.events.StreamEnded) and event.stream_id == stream_id:
                    self.sock.sendall(self.conn.data_to_send())
                    return int(response_headers[":status"]), response_headers, data
            self.sock.sendall(self.conn.data_to_send())
        raise AssertionError("no response")

    def close(self):
        self.sock.close()


@pytest.fixture(scope="module")
def key():
    return ec.generate_private_key(ec.SECP256R1())


@pytest.fixture(scope="module")
def sim(key):
    with tempfile.TemporaryDirectory(prefix="apns-sim-") as tmp:
        simulator = Simulator(pathlib.Path(tmp), key)
        yield simulator
        assert simulator.stop() == 0


_TOKENS: dict[int, str] = {}


def provider_token(key) -> str:
    """One token per key, reused like APNs asks (a new token string on a
    connection counts as a token update)."""
    if id(key) not in _TOKENS:
        _TOKENS[id(key)] = make_jwt(key, int(time.time()))
    return _TOKENS[id(key)]


def apns_headers(key, **overrides) -> list[tuple[str, str]]:
    values = {
        "authorization": f"bearer {provider_token(key)}",
        "apns-push-type": "alert", "apns-topic": TOPIC, "apns-priority": "10", "apns-expiration": "0",
    }
    values.update(overrides)
    return [(name, value) for name, value in values.items() if value is not None]


PAYLOAD = json.dumps({"aps": {"alert": {"title": "Hi", "body": "There"}}}, separators=(",", ":")).encode()


def test_valid_push_gets_200_and_apns_id(sim, key):
    client = H2Client(sim)
    apns_id = str(uuid.uuid4())
    status, headers, body = client.request(apns_headers(key, **{"apns-id": apns_id}), PAYLOAD)
    assert status == 200
    assert headers["apns-id"] == apns_id
    assert body == b""
    status, headers, _ = client.request(apns_headers(key), PAYLOAD)
    assert status == 200
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", headers["apns-id"])
    assert client.max_streams == 1000
    client.close()


@pytest.mark.parametrize("overrides,path,payload,method,status,reason", [
    ({}, "/3/device/nothex", PAYLOAD, "POST", 400, "BadDeviceToken"),
    ({"apns-topic": None}, None, PAYLOAD, "POST", 400, "MissingTopic"),
    ({"apns-topic": "com.other.app"}, None, PAYLOAD, "POST", 400, "TopicDisallowed"),
    ({"apns-push-type": "loud"}, None, PAYLOAD, "POST", 400, "InvalidPushType"),
    ({"apns-priority": "3"}, None, PAYLOAD, "POST", 400, "BadPriority"),
    ({"apns-push-type": "background", "apns-priority": "10"}, None, PAYLOAD, "POST", 400, "BadPriority"),
    ({"apns-expiration": "tomorrow"}, None, PAYLOAD, "POST", 400, "BadExpirationDate"),
    ({"apns-collapse-id": "x" * 65}, None, PAYLOAD, "POST", 400, "BadCollapseId"),
    ({}, None, b"", "POST", 400, "PayloadEmpty"),
    ({}, None, b'{"aps":{"alert":"' + b"x" * 5000 + b'"}}', "POST", 413, "PayloadTooLarge"),
    ({"authorization": None}, None, PAYLOAD, "POST", 403, "MissingProviderToken"),
    ({"authorization": "bearer not.a.jwt"}, None, PAYLOAD, "POST", 403, "InvalidProviderToken"),
    ({}, None, PAYLOAD, "GET", 405, "MethodNotAllowed"),
    ({}, "/3/other", PAYLOAD, "POST", 404, "BadPath"),
    ({}, f"/3/device/{'cd' * 32}", PAYLOAD, "POST", 410, "Unregistered"),
])
def test_invalid_requests_get_apns_reasons(sim, key, overrides, path, payload, method, status, reason):
    client = H2Client(sim)
    got_status, headers, body = client.request(
        apns_headers(key, **overrides), payload, method=method, path=path or f"/3/device/{TOKEN}")
    assert got_status == status
    document = json.loads(body)
    assert document["reason"] == reason
    if status == 410:
        assert document["timestamp"] == 1700000000123
    assert "apns-id" in headers
    client.close()


def test_signature_from_another_key_is_rejected(sim):
    other = ec.generate_private_key(ec.SECP256R1())
    client = H2Client(sim)
    status, _, body = client.request(
        apns_headers(other, authorization=f"bearer {make_jwt(other, int(time.time()))}"), PAYLOAD)
    assert (status, json.loads(body)["reason"]) == (403, "InvalidProviderToken")
    client.close()


def test_expired_provider_token(sim, key):
    client = H2Client(sim)
    status, _, body = client.request(
        apns_headers(key, authorization=f"bearer {make_jwt(key, int(time.time()) - 2 * 3600)}"), PAYLOAD)
    assert (status, json.loads(body)["reason"]) == (403, "ExpiredProviderToken")
    client.close()


def test_too_many_provider_token_updates(sim, key):
    client = H2Client(sim)
    now = int(time.time())
    status, _, _ = client.request(apns_headers(key, authorization=f"bearer {make_jwt(key, now)}"), PAYLOAD)
    assert status == 200
    status, _, body = client.request(apns_headers(key, authorization=f"bearer {make_jwt(key, now - 60)}"), PAYLOAD)
    assert (status, json.loads(body)["reason"]) == (429, "TooManyProviderTokenUpdates")
    client.close()


def test_garbage_does_not_crash(sim, key):
    for blob in [b"GET / HTTP/1.1\r\n\r\n", b"\x16\x03\x01\x00\xff" + b"\x00" * 10, os.urandom(50000)]:
        with socket.create_connection((sim.host, sim.port), timeout=1) as raw:
            try:
                raw.sendall(blob)
                raw.recv(1024)
            except OSError:
                pass
    client = H2Client(sim)
    assert client.request(apns_headers(key), PAYLOAD)[0] == 200
    client.close()


def test_herald_client_requires_alpn_h2(tmp_path, key):
    """The Swift client (bench mode of the same binary) refuses a TLS server
    that does not agree to ALPN h2, with a clear error."""
    import datetime
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    server_key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(server_key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(__import__("ipaddress").ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(server_key, hashes.SHA256()))
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(server_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    (tmp_path / "client.p8").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    context.set_alpn_protocols(["http/1.1"])
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve():
        for _ in range(10):
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            try:
                with context.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1024)
            except (OSError, ssl.SSLError):
                pass

    threading.Thread(target=serve, daemon=True).start()
    result = subprocess.run(
        [herald_binary(), "apns-sim", "--bench-connect", f"127.0.0.1:{port}", "--bench-ca", str(tmp_path / "cert.pem"),
         "--bench-p8", str(tmp_path / "client.p8"), "--bench-count", "1"],
        capture_output=True, text=True, timeout=60)
    listener.close()
    assert result.returncode != 0
    assert "ALPN h2" in result.stderr
