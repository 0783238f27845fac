"""Interop: an independent HTTP/2 client (python-h2 over ssl, ALPN h2) against
`herald fcm-sim` started from the built binary. Service-account assertions are
signed RS256 with the `cryptography` package and verified by the simulator's
token endpoint; the access tokens it mints authorize `messages:send`."""
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
import threading
import time
import urllib.parse

import h2.config
import h2.connection
import h2.events
import h2.settings
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

ROOT = pathlib.Path(__file__).resolve().parents[2]
LISTENING = re.compile(r"listening on (\S+):(\d+)")
PROJECT = "interop-project"
EMAIL = "sender@interop-project.iam.gserviceaccount.com"
KID = "4f1b0c2d9e8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c"
SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
TOKEN = "cJ3aXkL0Rz2:APA91bH" + "q" * 130
GONE = "gone-token_" + "g" * 40
FOREIGN = "foreign-token_" + "f" * 40


def herald_binary() -> str:
    path = os.environ.get("HERALD_BIN", str(ROOT / ".build" / "debug" / "herald"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"herald binary not found at {path}: run `swift build` first")
    return path


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def make_assertion(key: rsa.RSAPrivateKey, aud: str, *, kid: str = KID, iss: str = EMAIL, scope: str = SCOPE,
                   iat: int | None = None, lifetime: int = 3600, alg: str = "RS256") -> str:
    iat = int(time.time()) if iat is None else iat
    header = b64url(json.dumps({"alg": alg, "typ": "JWT", "kid": kid}, separators=(",", ":")).encode())
    claims = b64url(json.dumps({"iss": iss, "scope": scope, "aud": aud, "iat": iat, "exp": iat + lifetime},
                               separators=(",", ":")).encode())
    signing_input = f"{header}.{claims}".encode()
    signature = key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    return f"{header}.{claims}.{b64url(signature)}"


def token_form(assertion: str) -> bytes:
    return urllib.parse.urlencode({
        "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": assertion}).encode()


class Simulator:
    def __init__(self, tmp: pathlib.Path, key: rsa.RSAPrivateKey, *extra: str):
        public = tmp / "sa-public.pem"
        public.write_bytes(key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        self.ca = tmp / "fcm-ca.pem"
        self.record = tmp / "fcm-record.jsonl"
        cmd = [herald_binary(), "fcm-sim", "--port", "0", "--ca-out", str(self.ca), "--record", str(self.record),
               "--account", f"project={PROJECT} email={EMAIL} kid={KID} public-key={public}",
               "--unregistered", GONE, "--other-sender", FOREIGN, *extra]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self.stderr: list[str] = []
        self.reader = threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True)
        self.reader.start()
        line = self.proc.stdout.readline()
        match = LISTENING.search(line or "")
        if not match:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"fcm-sim did not report its port: {line!r} {''.join(self.stderr)}")
        self.host, self.port = match.group(1), int(match.group(2))
        self.extra_lines = [self.proc.stdout.readline().strip() for _ in range(2)]
        self.token_url = f"https://127.0.0.1:{self.port}/token"

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("fcm-sim did not exit on SIGTERM")
        self.reader.join(timeout=10)  # stderr is complete once the process is gone
        return code


class StreamReset(Exception):
    def __init__(self, code: int):
        super().__init__(f"stream reset with {code}")
        self.code = code


class ConnectionDropped(Exception):
    pass


class H2Client:
    """A minimal blocking HTTP/2 client over TLS with ALPN h2."""

    def __init__(self, sim: Simulator, server_name: str = "localhost"):
        context = ssl.create_default_context(cafile=str(sim.ca))
        context.set_alpn_protocols(["h2"])
        raw = socket.create_connection((sim.host, sim.port), timeout=10)
        self.sock = context.wrap_socket(raw, server_hostname=server_name)
        assert self.sock.selected_alpn_protocol() == "h2"
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.sock.sendall(self.conn.data_to_send())
        self.max_streams = None
        self.goaway_last_stream = None

    def request(self, path: str, body: bytes = b"", headers: list[tuple[str, str]] | None = None,
                method: str = "POST") -> tuple[int, dict[str, str], bytes]:
        stream_id = self.conn.get_next_available_stream_id()
        all_headers = [(":method", method), (":scheme", "https"), (":authority", "localhost"), (":path", path)]
        self.conn.send_headers(stream_id, all_headers + (headers or []), end_stream=not body)
        for start in range(0, len(body), 16384):  # the default SETTINGS_MAX_FRAME_SIZE
            self.conn.send_data(stream_id, body[start:start + 16384], end_stream=start + 16384 >= len(body))
        self.sock.sendall(self.conn.data_to_send())
        response_headers: dict[str, str] = {}
        data = b""
        for _ in range(1000):
            try:
                chunk = self.sock.recv(65536)
            except (ConnectionResetError, ssl.SSLError):
                chunk = b""
            if not chunk:
                raise ConnectionDropped()
            for event in self.conn.receive_data(chunk):
                if isinstance(event, h2.events.RemoteSettingsChanged):
                    setting = event.changed_settings.get(h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS)
                    if setting is not None:
                        self.max_streams = setting.new_value
                elif isinstance(event, h2.events.ConnectionTerminated):
                    self.goaway_last_stream = event.last_stream_id
                elif isinstance(event, h2.events.StreamReset) and event.stream_id == stream_id:
                    raise StreamReset(event.error_code)
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

    def token(self, assertion: str) -> tuple[int, dict]:
        status, _, body = self.request("/token", token_form(assertion),
                                       [("content-type", "application/x-www-form-urlencoded")])
        return status, json.loads(body)

    def send(self, access_token: str | None, message: dict | bytes, project: str = PROJECT):
        headers = [("content-type", "application/json")]
        if access_token is not None:
            headers.append(("authorization", f"Bearer {access_token}"))
        body = message if isinstance(message, bytes) else json.dumps(message).encode()
        return self.request(f"/v1/projects/{project}/messages:send", body, headers)

    def close(self):
        self.sock.close()


def google_error(body: bytes) -> tuple[int, str, str, str | None]:
    error = json.loads(body)["error"]
    details = error.get("details") or [{}]
    assert details[0].get("@type", "type.googleapis.com/google.firebase.fcm.v1.FcmError") == \
        "type.googleapis.com/google.firebase.fcm.v1.FcmError"
    return error["code"], error["status"], error["message"], details[0].get("errorCode")


@pytest.fixture(scope="module")
def key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def sim(key, tmp_path_factory):
    simulator = Simulator(tmp_path_factory.mktemp("fcm-sim"), key)
    yield simulator
    assert simulator.stop() == 0


@pytest.fixture(scope="module")
def access_token(sim, key):
    client = H2Client(sim)
    status, body = client.token(make_assertion(key, sim.token_url))
    client.close()
    assert status == 200, body
    return body["access_token"]


def message(**fields) -> dict:
    return {"message": {"token": TOKEN, "notification": {"title": "Hi", "body": "There"}, **fields}}


def test_prints_certificate_and_token_url(sim):
    assert sim.extra_lines == [f"certificate {sim.ca}", f"token-url https://{sim.host}:{sim.port}/token"]
    assert "BEGIN CERTIFICATE" in sim.ca.read_text()


def test_token_endpoint_mints_access_tokens(sim, key):
    client = H2Client(sim)
    status, body = client.token(make_assertion(key, sim.token_url))
    assert status == 200
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 3600
    assert isinstance(body["access_token"], str) and body["access_token"]
    # localhost names the same endpoint.
    status, _ = client.token(make_assertion(key, f"https://localhost:{sim.port}/token"))
    assert status == 200
    assert client.max_streams == 100
    client.close()


@pytest.mark.parametrize("change", [
    "other-key", "kid", "iss", "aud", "scope", "iat-future", "too-long", "expired", "alg",
])
def test_token_endpoint_refuses_bad_assertions(sim, key, change):
    kwargs: dict = {}
    signer = key
    aud = sim.token_url
    now = int(time.time())
    if change == "other-key":
        signer = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    elif change == "kid":
        kwargs["kid"] = "another-kid"
    elif change == "iss":
        kwargs["iss"] = "other@interop-project.iam.gserviceaccount.com"
    elif change == "aud":
        aud = "https://oauth2.googleapis.com/token"
    elif change == "scope":
        kwargs["scope"] = "https://www.googleapis.com/auth/cloud-platform"
    elif change == "iat-future":
        kwargs["iat"] = now + 300
    elif change == "too-long":
        kwargs["lifetime"] = 3601
    elif change == "expired":
        kwargs["iat"] = now - 7300
    elif change == "alg":
        kwargs["alg"] = "RS512"
    client = H2Client(sim)
    status, body = client.token(make_assertion(signer, aud, **kwargs))
    assert status == 400
    assert body["error"] == "invalid_grant"
    assert body["error_description"]
    client.close()


def test_token_endpoint_hostile_bodies(sim):
    client = H2Client(sim)
    for body, error in [(b"x" * 60_000, "invalid_request"), (b"grant_type=%zz", "invalid_request"),
                        (b"grant_type=password&assertion=a", "unsupported_grant_type"),
                        (token_form("a.b"), "invalid_grant"), (token_form("!!.??.**"), "invalid_grant")]:
        status, _, answer = client.request("/token", body)
        assert status == 400
        assert json.loads(answer)["error"] == error
    client.close()


def test_send_accepts_and_records(sim, access_token):
    client = H2Client(sim)
    body = message(data={"k": "v"}, android={"priority": "HIGH", "ttl": "3600s", "collapse_key": "c"})
    status, headers, answer = client.send(access_token, body)
    assert status == 200, answer
    assert headers["content-type"].startswith("application/json")
    name = json.loads(answer)["name"]
    assert name.startswith(f"projects/{PROJECT}/messages/")
    client.close()
    lines = [json.loads(line) for line in sim.record.read_text().splitlines()]
    mine = [line for line in lines if line["name"] == name]
    assert len(mine) == 1
    assert mine[0]["service"] == "fcm"
    assert mine[0]["project"] == PROJECT
    assert mine[0]["token"] == TOKEN
    assert mine[0]["message"] == body["message"]


@pytest.mark.parametrize("body,names", [
    (b"{nope", "Invalid JSON payload"),
    ({"message": {"notification": {"title": "x"}}}, "message.token"),
    ({"message": {"token": TOKEN, "topic": "news"}}, "exactly one"),
    (message(data={"n": 1}), "message.data[n].value"),
    (message(data={"from": "x"}), '"from"'),
    (message(data={"google.x": "x"}), '"google.x"'),
    (message(data={"gcm": "x"}), '"gcm"'),
    (message(android={"ttl": "1h"}), "message.android.ttl"),
    (message(android={"ttl": "2419201s"}), "message.android.ttl"),
    (message(android={"priority": "URGENT"}), "message.android.priority"),
    (message(notification={"title": 3}), "message.notification.title"),
    ({"message": {"token": "bad token!"}}, "message.token"),
    (message(data={"blob": "x" * 4100}), "too big"),
])
def test_send_invalid_names_the_field(sim, access_token, body, names):
    client = H2Client(sim)
    status, _, answer = client.send(access_token, body)
    assert status == 400
    code, rpc_status, text, error_code = google_error(answer)
    assert (code, rpc_status, error_code) == (400, "INVALID_ARGUMENT", "INVALID_ARGUMENT")
    assert names in text
    client.close()


def test_send_authentication_and_project(sim, access_token):
    client = H2Client(sim)
    for token in [None, "unknown-token"]:
        status, _, answer = client.send(token, message())
        assert status == 401
        assert google_error(answer)[1] == "UNAUTHENTICATED"
    status, _, answer = client.send(access_token, message(), project="someone-else")
    assert status == 403
    assert google_error(answer)[1] == "PERMISSION_DENIED"
    client.close()


def test_send_token_registry(sim, access_token):
    client = H2Client(sim)
    status, _, answer = client.send(access_token, message(token=GONE))
    assert status == 404
    assert google_error(answer)[1:4:2] == ("NOT_FOUND", "UNREGISTERED")
    status, _, answer = client.send(access_token, message(token=FOREIGN))
    assert status == 403
    assert google_error(answer)[1:4:2] == ("PERMISSION_DENIED", "SENDER_ID_MISMATCH")
    client.close()


def test_garbage_does_not_crash(sim, access_token):
    for blob in [b"GET / HTTP/1.1\r\n\r\n", b"\x16\x03\x01\x00\xff" + b"\x00" * 10, os.urandom(50000)]:
        with socket.create_connection((sim.host, sim.port), timeout=1) as raw:
            try:
                raw.sendall(blob)
                raw.recv(1024)
            except OSError:
                pass
    client = H2Client(sim)
    assert client.send(access_token, message())[0] == 200
    client.close()


def test_faults_given_at_start_apply_in_order(key, tmp_path):
    sim = Simulator(tmp_path, key, "--fault", "invalid-grant", "--fault", "quota=9", "--fault", "internal:2",
                    "--fault", "unavailable=4", "--fault", "bad-gateway", "--fault", "third-party-auth",
                    "--fault", "slow=200",
                    "--fault", "goaway", "--fault", "drop")
    try:
        client = H2Client(sim)
        status, body = client.token(make_assertion(key, sim.token_url))
        assert (status, body["error"]) == (400, "invalid_grant")
        status, body = client.token(make_assertion(key, sim.token_url))
        assert status == 200
        token = body["access_token"]

        status, headers, answer = client.send(token, message())
        assert (status, headers.get("retry-after")) == (429, "9")
        assert google_error(answer)[1:4:2] == ("RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED")
        for _ in range(2):
            status, _, answer = client.send(token, message())
            assert status == 500
            assert google_error(answer)[1:4:2] == ("INTERNAL", "INTERNAL")
        status, headers, answer = client.send(token, message())
        assert (status, headers.get("retry-after")) == (503, "4")
        assert google_error(answer)[1:4:2] == ("UNAVAILABLE", "UNAVAILABLE")
        status, headers, answer = client.send(token, message())
        assert status == 502
        assert headers["content-type"].startswith("text/html")
        assert b"<html" in answer
        status, _, answer = client.send(token, message())
        assert status == 401
        assert google_error(answer)[1:4:2] == ("UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR")
        started = time.monotonic()
        assert client.send(token, message())[0] == 200
        assert time.monotonic() - started >= 0.2

        with pytest.raises(StreamReset) as reset:
            client.send(token, message())
        assert reset.value.code == 7  # REFUSED_STREAM: not processed, safe to retry
        client.close()

        client = H2Client(sim)
        with pytest.raises(ConnectionDropped):
            client.send(token, message())
        client.close()

        client = H2Client(sim)
        assert client.send(token, message())[0] == 200
        client.close()
        assert len(sim.record.read_text().splitlines()) == 2
    finally:
        assert sim.stop() == 0


def test_quota_bucket_and_short_token_lifetime(key, tmp_path):
    sim = Simulator(tmp_path, key, "--quota-per-minute", "2", "--token-lifetime-seconds", "120")
    try:
        client = H2Client(sim)
        status, body = client.token(make_assertion(key, sim.token_url))
        assert (status, body["expires_in"]) == (200, 120)
        token = body["access_token"]
        assert client.send(token, message())[0] == 200
        assert client.send(token, message())[0] == 200
        status, headers, answer = client.send(token, message())
        assert status == 429
        assert 1 <= int(headers["retry-after"]) <= 30
        assert google_error(answer)[3] == "QUOTA_EXCEEDED"
        client.close()
    finally:
        assert sim.stop() == 0
    # One stderr line per accepted message, every one logged before exit.
    assert len([line for line in sim.stderr if line.startswith(f"delivered projects/{PROJECT}/messages/")]) == 2
    assert all(f"token={TOKEN[:8]}" in line for line in sim.stderr if line.startswith("delivered"))


@pytest.mark.parametrize("args", [
    [],
    ["--account", "project=p email=e kid=k"],
    ["--account", "project=p email=e kid=k public-key=/nonexistent/key.pem"],
    ["--account", "project=p email=e kid=k public-key=x", "--fault", "explode"],
    ["--account", "project=p email=e kid=k public-key=x", "--fault", "internal:0"],
])
def test_bad_arguments_are_refused(args):
    result = subprocess.run([herald_binary(), "fcm-sim", *args], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert result.stderr.strip()


def test_record_survives_kill_9(key, tmp_path):
    """Every message answered 200 is in the record file even when the
    simulator is killed right after the answer (one write per line, before the 200)."""
    sim = Simulator(tmp_path, key, "--quiet")
    names = []
    try:
        client = H2Client(sim)
        status, body = client.token(make_assertion(key, sim.token_url))
        assert status == 200
        for index in range(20):
            status, _, answer = client.send(body["access_token"], message(data={"i": str(index)}))
            assert status == 200
            names.append(json.loads(answer)["name"])
        sim.proc.kill()
        sim.proc.wait(timeout=20)
        client.close()
    finally:
        if sim.proc.poll() is None:
            sim.proc.kill()
            sim.proc.wait()
    lines = [json.loads(line) for line in sim.record.read_text().splitlines()]
    assert [line["name"] for line in lines] == names
    assert [line["message"]["data"]["i"] for line in lines] == [str(index) for index in range(20)]
    assert not any(line.startswith("delivered") for line in sim.stderr)  # --quiet
