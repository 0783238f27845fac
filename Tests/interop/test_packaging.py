"""Packaging (docs/DEPLOYING.md): the self-contained binary from
scripts/package.sh and the systemd unit in deploy/.

The packaged-binary tests run when HERALD_PACKAGED_BIN names the binary
scripts/package.sh built (scripts/test.sh builds the package and sets it,
unless HERALD_PACKAGE=0); the unit tests run wherever systemd-analyze is
installed (scripts/bootstrap.sh installs it)."""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import signal
import subprocess
import tempfile

import grpc
import pytest

from conftest import LISTENING, ROOT, herald_binary

UNIT = ROOT / "deploy" / "herald.service"
INSTALLED_PATH = "/usr/local/bin/herald"


def packaged_binary() -> str:
    path = os.environ.get("HERALD_PACKAGED_BIN")
    if not path:
        pytest.skip("HERALD_PACKAGED_BIN is not set: run scripts/package.sh and point it at "
                    "dist/herald-*/bin/herald (scripts/test.sh does both)")
    assert os.access(path, os.X_OK), f"HERALD_PACKAGED_BIN={path} is not an executable"
    return path


def toolchain_root() -> pathlib.Path | None:
    swift = shutil.which("swift")
    return pathlib.Path(os.path.realpath(swift)).parents[2] if swift else None


def clean_env() -> dict[str, str]:
    """An environment that cannot lead the loader to the toolchain."""
    return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}


def test_packaged_binary_links_only_system_libraries():
    binary = packaged_binary()
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, timeout=30, env=clean_env())
    assert out.returncode == 0, out.stderr
    lines = [line.strip() for line in out.stdout.splitlines() if line.strip()]
    assert not [line for line in lines if "not found" in line], out.stdout
    toolchain = toolchain_root()
    if toolchain is not None:
        assert not [line for line in lines if str(toolchain) + "/" in line], out.stdout
    # Nothing of the Swift runtime is loaded dynamically at all.
    swift_libs = re.compile(r"lib(swift\w*|Foundation\w*|dispatch|BlocksRuntime|_Foundation\w*)\.so")
    assert not [line for line in lines if swift_libs.search(line)], out.stdout
    # Every library resolves into the system's library directories.
    for line in lines:
        if "=>" in line:
            target = line.split("=>", 1)[1].split("(")[0].strip()
            assert target.startswith(("/lib", "/usr/lib")), line


def test_packaged_binary_is_lean_to_load():
    """The packaged binary carries no DWARF (its .debug file sits beside the
    tarball, named by .gnu_debuglink), packs its relative relocations
    (DT_RELR) and exports no symbols: what the loader reads at every start."""
    binary = packaged_binary()
    sections = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, timeout=30)
    assert sections.returncode == 0, sections.stderr
    assert ".debug_info" not in sections.stdout, "the packaged binary still carries DWARF"
    assert ".gnu_debuglink" in sections.stdout, sections.stdout
    link = subprocess.run(["readelf", "-p", ".gnu_debuglink", binary], capture_output=True, text=True,
                          errors="replace", timeout=30)
    debug_name = re.search(r"\]\s+(\S+\.debug)", link.stdout)
    assert debug_name, link.stdout
    stage = pathlib.Path(binary).resolve().parents[1]
    assert (stage.parent / debug_name.group(1)).is_file(), f"{debug_name.group(1)} is not beside {stage}"
    dynamic = subprocess.run(["readelf", "-dW", binary], capture_output=True, text=True, timeout=30)
    assert "(RELR)" in dynamic.stdout, dynamic.stdout
    relasz = re.search(r"\(RELASZ\)\s+(\d+) \(bytes\)", dynamic.stdout)
    assert relasz and int(relasz.group(1)) < 256 * 1024, dynamic.stdout
    symbols = subprocess.run(["readelf", "--dyn-syms", "-W", binary], capture_output=True, text=True, timeout=30)
    exported = [line for line in symbols.stdout.splitlines()
                if re.search(r"\b(FUNC|OBJECT)\s+GLOBAL\s+DEFAULT\s+\d+\s", line)]
    assert len(exported) < 100, f"{len(exported)} exported symbols, e.g. {exported[:3]}"


def test_packaged_binary_answers_version_and_help():
    binary = packaged_binary()
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30, env=clean_env())
    assert version.returncode == 0, version.stderr
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*\n", version.stdout), version.stdout
    help_ = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30, env=clean_env())
    assert help_.returncode == 0, help_.stderr
    assert "serve" in help_.stdout and "apns-sim" in help_.stdout, help_.stdout


def test_packaged_binary_serves_without_the_toolchain(stubs, tmp_path):
    """The packaged server starts, answers Status and drains on SIGTERM with
    only the system's libraries (a minimal environment)."""
    binary = packaged_binary()
    proc = subprocess.Popen([binary, "serve", "--port", "0", "--data-dir", str(tmp_path / "data")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env())
    try:
        line = proc.stdout.readline()
        match = LISTENING.search(line or "")
        assert match, f"no listening line: {line!r}"
        with grpc.insecure_channel(f"{match.group(1)}:{match.group(2)}") as channel:
            status = stubs.push_pb2_grpc.PushServiceStub(channel).Status(stubs.push_pb2.StatusRequest(), timeout=10)
        assert status.version
        assert status.store.kind == "sqlite"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def unit_settings(text: str) -> dict[str, list[str]]:
    """Key → values of a unit file (sections merged; comments skipped)."""
    settings: dict[str, list[str]] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";", "[")):
            continue
        key, _, value = line.partition("=")
        settings.setdefault(key.strip(), []).append(value.strip())
    return settings


def test_service_unit_is_hardened_and_reloads_with_sighup():
    s = unit_settings(UNIT.read_text())
    (exec_start,) = s["ExecStart"]
    assert exec_start.split()[:2] == [INSTALLED_PATH, "serve"]
    assert "--data-dir /var/lib/herald" in exec_start
    assert s["ExecReload"] == ["/bin/kill -HUP $MAINPID"]
    assert s["StateDirectory"] == ["herald"]
    assert s["Restart"] == ["on-failure"]
    assert s.get("User") == ["herald"] or s.get("DynamicUser") == ["yes"]
    for key, value in {"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
                       "PrivateTmp": "yes", "CapabilityBoundingSet": ""}.items():
        assert s.get(key) == [value], key
    assert int(s["LimitNOFILE"][0]) >= 8192


def verifiable_unit(tmp_path: pathlib.Path) -> pathlib.Path:
    """The unit with its ExecStart pointed at a real herald binary (verify
    checks the command exists), under the same file name."""
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze not installed (apt-get install systemd)")
    binary = os.environ.get("HERALD_PACKAGED_BIN") or herald_binary()
    unit = tmp_path / "herald.service"
    unit.write_text(UNIT.read_text().replace(INSTALLED_PATH, os.path.abspath(binary)))
    return unit


def test_service_unit_passes_systemd_analyze_verify(tmp_path):
    unit = verifiable_unit(tmp_path)
    out = subprocess.run(["systemd-analyze", "verify", "--man=no", str(unit)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    # verify prints a line per problem (unknown keys, bad values) even when
    # it exits 0; none may name the unit.
    assert "herald.service" not in out.stdout + out.stderr, out.stdout + out.stderr


def test_service_unit_exposure_is_low(tmp_path):
    unit = verifiable_unit(tmp_path)
    out = subprocess.run(["systemd-analyze", "security", "--offline=true", "--no-pager", str(unit)],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0 and "offline" in out.stderr:
        pytest.skip("this systemd-analyze has no offline security check")
    match = re.search(r"Overall exposure level for herald\.service: ([0-9.]+)", out.stdout)
    assert match, out.stdout + out.stderr
    # 0 (locked down) … 10 (unprotected); systemd calls < 2 "OK".
    assert float(match.group(1)) < 2.0, out.stdout
