"""Issue 24 item 6 on the real binary: the PostgreSQL password from a
0600 password file (`passfile=` or `PGPASSFILE`) instead of `--store`,
which `ps` shows; a file others may read stops start-up naming it.
Hostile first. The refusals need no database; the start needs
`HERALD_TEST_POSTGRES_URL` (scripts/pg-test-cluster.sh) and skips
without it."""
from __future__ import annotations

import os
import subprocess

import pytest

from conftest import herald_binary, start_herald

URL = os.environ.get("HERALD_TEST_POSTGRES_URL", "")


def run(*args, env=None, timeout=60):
    return subprocess.run([herald_binary(), *args], capture_output=True, text=True, timeout=timeout,
                          env=env or dict(os.environ))


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604])
def test_a_password_file_others_may_read_stops_start_up_naming_it(tmp_path, mode):
    passfile = tmp_path / "pgpass"
    passfile.write_text("*:*:*:*:hunter2\n")
    os.chmod(passfile, mode)
    url = f"postgres://herald@127.0.0.1:1/herald?passfile={passfile}"
    for args, env in (
        (["--store", url], None),
        (["--store", "postgres://herald@127.0.0.1:1/herald"], dict(os.environ, PGPASSFILE=str(passfile))),
    ):
        result = run("serve", "--port", "0", "--data-dir", str(tmp_path / "data"), *args, env=env)
        assert result.returncode != 0
        assert "listening" not in result.stdout
        assert str(passfile) in result.stderr and "chmod 600" in result.stderr, result.stderr
        assert "hunter2" not in result.stderr + result.stdout


def test_sslrootcert_without_tls_and_prefer_are_refused(tmp_path):
    for url in ("postgres://herald@db.example/herald?sslmode=disable&sslrootcert=/ca.pem",
                "postgres://herald@db.example/herald?sslmode=prefer"):
        result = run("serve", "--port", "0", "--data-dir", str(tmp_path / "data"), "--store", url)
        assert result.returncode != 0 and "--store" in result.stderr, result.stderr


@pytest.mark.skipif(not URL, reason="HERALD_TEST_POSTGRES_URL is not set")
def test_the_password_comes_from_the_file_and_never_shows(tmp_path, monkeypatch):
    passfile = tmp_path / "pgpass"
    passfile.write_text("# herald\n*:*:*:herald:s3cret-from-file\n")
    os.chmod(passfile, 0o600)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    server = start_herald("--store", URL, data_dir=str(tmp_path / "data"))
    try:
        cmdline = open(f"/proc/{server.proc.pid}/cmdline", "rb").read().decode()
        assert "s3cret" not in cmdline
    finally:
        assert server.stop() == 0
    assert not any("s3cret" in line for line in server.stderr_lines)
