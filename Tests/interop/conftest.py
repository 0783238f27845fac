"""Fixtures for the interop suite: the real `herald` binary on a free loopback
port, and Python gRPC stubs generated from Protos/ by grpcio-tools."""
from __future__ import annotations

import importlib
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Files the tests write (tokens files, routes files, .p8 keys, service-account
# JSON) are owner-only, as Herald requires of secrets files: it refuses one
# that group or others may read. Helpers below also chmod 0600 explicitly.
os.umask(0o077)
PROTOS = ROOT / "Protos"
LISTENING = re.compile(r"listening on (\S+):(\d+)")
ADMIN_LISTENING = re.compile(r"^admin listening on (\S+):(\d+)")


def herald_binary() -> str:
    path = os.environ.get("HERALD_BIN", str(ROOT / ".build" / "debug" / "herald"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"herald binary not found at {path}: run `swift build` first")
    return path


@dataclass
class HeraldProcess:
    """A running `herald serve`; `.stderr_lines` collects its log lines."""

    proc: subprocess.Popen
    host: str
    port: int
    data_dir: str
    stderr_lines: list[str] = field(default_factory=list)
    #: The admin listener's port (`--admin-port`), from the second stdout line.
    admin_port: int | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM, then wait for a graceful exit; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("herald did not exit within the graceful-shutdown bound")


def start_herald(*args: str, data_dir: str | None = None, preexec_fn=None, admin: bool | None = None) -> HeraldProcess:
    """Starts `herald serve` on port 0; `admin` (default: `--admin-port` is
    among `args`) reads the admin listener's line too."""
    data_dir = data_dir or tempfile.mkdtemp(prefix="herald-data-")
    cmd = [herald_binary(), "serve", "--port", "0", "--data-dir", data_dir, *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
                            preexec_fn=preexec_fn)
    stderr_lines: list[str] = []
    threading.Thread(target=lambda: stderr_lines.extend(proc.stderr), daemon=True).start()
    # The first stdout line names the bound address; no sleeps, just read it.
    line = proc.stdout.readline()
    match = LISTENING.search(line or "")
    if not match:
        proc.kill()
        proc.wait()
        raise AssertionError(f"herald did not report its port: {line!r} {''.join(stderr_lines)}")
    admin_port = None
    if admin if admin is not None else "--admin-port" in args:
        # `admin listening on HOST:PORT` follows the first line.
        admin = ADMIN_LISTENING.search(proc.stdout.readline() or "")
        if not admin:
            proc.kill()
            proc.wait()
            raise AssertionError(f"herald did not report its admin port: {''.join(stderr_lines)}")
        admin_port = int(admin.group(2))
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
    return HeraldProcess(proc, match.group(1), int(match.group(2)), data_dir, stderr_lines, admin_port)


@pytest.fixture
def herald():
    server = start_herald()
    yield server
    code = server.stop()
    assert code == 0, f"herald exited with {code}"


@pytest.fixture(scope="session")
def stubs():
    """Modules generated from Protos/ by grpcio-tools, importable by name."""
    from grpc_tools import protoc

    out = tempfile.mkdtemp(prefix="herald-stubs-")
    protos = sorted(str(p.relative_to(PROTOS)) for p in PROTOS.rglob("*.proto")
                    if not str(p).startswith(str(PROTOS / "google")))
    include = pathlib.Path(protoc.__file__).parent / "_proto"
    rc = protoc.main(["protoc", f"-I{PROTOS}", f"-I{include}", f"--python_out={out}",
                      f"--grpc_python_out={out}", *protos])
    assert rc == 0, "grpc_tools.protoc failed"
    sys.path.insert(0, out)

    class Stubs:
        """The generated modules, and a Health stub (see `_load`)."""

    ns = Stubs()
    ns.health_pb2 = _load(out, "grpc/health/v1/health_pb2.py")
    ns.types_pb2 = importlib.import_module("herald.v1.types_pb2")
    ns.push_pb2 = importlib.import_module("herald.v1.push_service_pb2")
    ns.push_pb2_grpc = importlib.import_module("herald.v1.push_service_pb2_grpc")
    ns.read_pb2 = importlib.import_module("herald.v1.read_side_pb2")
    ns.device_pb2 = importlib.import_module("herald.v1.device_service_pb2")
    ns.device_pb2_grpc = importlib.import_module("herald.v1.device_service_pb2_grpc")

    def health_stub(channel):
        # The generated health_pb2_grpc imports `grpc.health.v1`, which the
        # installed `grpc` package shadows; the same stub, built directly.
        class HealthStub:
            Check = channel.unary_unary(
                "/grpc.health.v1.Health/Check",
                request_serializer=ns.health_pb2.HealthCheckRequest.SerializeToString,
                response_deserializer=ns.health_pb2.HealthCheckResponse.FromString,
            )
        return HealthStub()

    ns.HealthStub = health_stub
    return ns


def _load(out: str, rel: str):
    """Loads a generated module by file: `grpc.health.v1` would clash with the
    installed `grpc` package, so it is imported under a name of its own."""
    import importlib.util

    name = "herald_stub_" + rel.replace("/", "_").removesuffix(".py")
    spec = importlib.util.spec_from_file_location(name, os.path.join(out, rel))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def routed_apns_simulator(tmp_path, bundle: str):
    """An `apns-sim` for team TEAM123456, key id ROUTEKEY01 and `bundle`, with
    the matching .p8 written beside its CA: a generator yielding `port`, `ca`,
    `p8` and `log` (its stderr lines, read as they come); a fixture yields
    from it and the simulator stops after the test."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    key = ec.generate_private_key(ec.SECP256R1())
    p8 = tmp_path / "AuthKey_ROUTEKEY01.p8"
    p8.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()))
    os.chmod(p8, 0o600)
    public = tmp_path / "public.pem"
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    ca = tmp_path / "sim-ca.pem"
    proc = subprocess.Popen([herald_binary(), "apns-sim", "--port", "0", "--ca-out", str(ca),
                             "--key-id", "ROUTEKEY01", "--team-id", "TEAM123456", "--public-key", str(public),
                             "--topics", bundle], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    match = re.search(r"listening on (\S+):(\d+)", line)
    assert match, line
    log: list[str] = []
    threading.Thread(target=lambda: log.extend(proc.stderr), daemon=True).start()
    yield {"port": int(match.group(2)), "ca": str(ca), "p8": str(p8), "log": log}
    proc.terminate()
    proc.wait(timeout=30)


def pytest_configure(config):
    config.addinivalue_line("markers", "herald_args(*flags): flags for the `server` fixture's herald serve")
    # Every `tempfile.mkdtemp` of the run (data dirs, stubs, certificates)
    # goes under one root that the end of the session removes, pass or fail.
    # 0755: a test runs herald as `nobody` on a data dir below it.
    root = tempfile.mkdtemp(prefix="herald-interop-")
    os.chmod(root, 0o755)
    config._herald_tmp_root = root
    tempfile.tempdir = root


def pytest_unconfigure(config):
    root = getattr(config, "_herald_tmp_root", None)
    if root:
        tempfile.tempdir = None
        shutil.rmtree(root, ignore_errors=True)


def write_service_account(directory, project="herald-test", *, token_uri="https://oauth2.googleapis.com/token",
                          name="service-account.json", key=None):
    """A Google service-account JSON key (fresh RSA key unless given) in
    `directory`; returns (path, private key)."""
    import json as _json

    from cryptography.hazmat.primitives import serialization as _serialization
    from cryptography.hazmat.primitives.asymmetric import rsa as _rsa

    key = key or _rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(_serialization.Encoding.PEM, _serialization.PrivateFormat.PKCS8,
                            _serialization.NoEncryption()).decode()
    path = pathlib.Path(directory) / name
    path.write_text(_json.dumps({
        "type": "service_account", "project_id": project, "private_key_id": "kid-" + project,
        "private_key": pem, "client_email": f"herald@{project}.iam.gserviceaccount.com",
        "client_id": "1", "token_uri": token_uri,
    }))
    os.chmod(path, 0o600)
    return str(path), key
