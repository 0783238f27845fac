"""One Herald replica on PostgreSQL (`--store postgres://…`), with the real
binary and stock grpcio: every RPC and the delivery to the simulator as on
SQLite, a restart keeps the messages, kill -9 mid-dispatch loses nothing
acknowledged and resends nothing (SPEC §4's crash rule, as
test_crash_delivery.py checks it on SQLite).

Needs `HERALD_TEST_POSTGRES_URL` (scripts/test.sh starts a throwaway
cluster and sets it); without it these tests skip, unless `CI=true`, where
that is a failure. Each test gets a database of its own, dropped after.
Hostile cases first; every wait is for a condition, bounded by a deadline."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import uuid

import grpc
import pytest

from conftest import herald_binary, start_herald
from crash_cycles import CrashRun
from test_store_ops import BUNDLE, Api, later

URL = os.environ.get("HERALD_TEST_POSTGRES_URL", "")

if not URL:
    if os.environ.get("CI") == "true":
        pytest.fail("CI=true but HERALD_TEST_POSTGRES_URL is not set: the PostgreSQL tests cannot run",
                    pytrace=False)
    pytest.skip("HERALD_TEST_POSTGRES_URL is not set: the PostgreSQL tests skip "
                "(scripts/test.sh starts a throwaway cluster and sets it)", allow_module_level=True)


def psql(url: str, sql: str, *params: str) -> list[list[str]]:
    """Runs `sql` with psql; `?` placeholders become psql variables (quoted
    literals), so values never enter the SQL text. Rows of text fields."""
    args = ["psql", url, "-X", "-q", "-A", "-t", "-F", "\x1f", "-v", "ON_ERROR_STOP=1"]
    parts = sql.split("?")
    assert len(parts) == len(params) + 1, sql
    text = parts[0]
    for i, value in enumerate(params):
        args += ["-v", f"p{i}={value}"]
        text += f":'p{i}'" + parts[i + 1]
    result = subprocess.run(args, input=text, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return [line.split("\x1f") for line in result.stdout.splitlines() if line]


@pytest.fixture
def database():
    """A fresh database on the test cluster; its URL. Dropped after."""
    assert shutil.which("psql"), "psql not found (Debian's postgresql-client)"
    name = "herald_t_" + uuid.uuid4().hex[:12]
    psql(URL, f"CREATE DATABASE {name}")
    base, _, query = URL.partition("?")
    url = base.rsplit("/", 1)[0] + "/" + name + (("?" + query) if query else "")
    try:
        yield url
    finally:
        psql(URL, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def run(*args, timeout=60):
    return subprocess.run([herald_binary(), *args], capture_output=True, text=True, timeout=timeout)


# MARK: hostile first

def test_the_database_down_at_start_stops_start_up_naming_the_url_without_the_password(tmp_path):
    # A port nothing listens on (the cluster's own, plus nothing: pick a closed one).
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgres://herald:hunter2@127.0.0.1:{port}/herald"
    result = run("serve", "--port", "0", "--data-dir", str(tmp_path / "data"), "--store", url)
    assert result.returncode != 0
    assert "listening" not in result.stdout
    assert "hunter2" not in result.stderr and "hunter2" not in result.stdout
    assert f"postgres://herald:***@127.0.0.1:{port}/herald" in result.stderr, result.stderr


def test_a_bad_store_url_is_refused_by_the_settings_check(tmp_path):
    for value in ("postgres://herald:pw@h/d?sslmode=prefer", "mysql://x", "sqlite:", "postgres://h/d"):
        result = run("serve", "--port", "0", "--data-dir", str(tmp_path / "data"), "--store", value)
        assert result.returncode != 0, value
        assert "--store" in result.stderr and "pw@" not in result.stderr, result.stderr
    env = dict(os.environ, HERALD_STORE="postgres://u:secret@h/d?bogus=1")
    result = subprocess.run([herald_binary(), "serve", "--check-config", "--data-dir", str(tmp_path / "d")],
                            capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode != 0 and "HERALD_STORE" in result.stderr and "secret" not in result.stderr, result.stderr


# MARK: one replica serves every RPC

def test_schedule_cancel_get_and_delivery_then_a_restart_keeps_everything(stubs, tmp_path, database):
    record = tmp_path / "apns-sim.jsonl"
    data = str(tmp_path / "data")
    server = start_herald("--store", database, "--grace-seconds", "0", "--sim-record", str(record), data_dir=data)
    try:
        api = Api(stubs, server.address)
        t, p = api.t, api.p
        assert api.register("u1", "ab" * 32).created
        assert not api.register("u1", "ab" * 32).created
        now_id = api.schedule("u1", "k-now").message_id
        later_id = api.schedule("u1", "k-later", after=later()).message_id
        # Last request wins on an unsent key.
        again = api.schedule("u1", "k-later", after=later())
        assert again.replaced and again.message_id != later_id
        assert api.get(later_id).message.state == t.MessageState.Value("MESSAGE_STATE_SUPERSEDED")
        cancelled = api.push.Cancel(p.CancelRequest(
            bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id="u1", campaign_id="camp",
            idempotency_key="k-later"), timeout=10)
        assert cancelled.cancelled
        sent = api.wait_state(now_id, "MESSAGE_STATE_SENT")
        assert [d.device_token for d in sent.devices] == ["ab" * 32]
        # A sent key is spent: ALREADY_EXISTS.
        with pytest.raises(grpc.RpcError) as spent:
            api.schedule("u1", "k-now")
        assert spent.value.code() == grpc.StatusCode.ALREADY_EXISTS
        assert {m.message_id for m in api.list_all("u1")} == {now_id, later_id, again.message_id}
        api.channel.close()
    finally:
        assert server.stop() == 0
    lines = [line for line in record.read_text().splitlines() if line.strip()]
    assert len(lines) == 1 and "ab" * 32 in lines[0]
    # The store lives in PostgreSQL: no SQLite file, no lock in the data directory.
    assert not os.path.exists(os.path.join(data, "herald.sqlite"))
    assert psql(database, "SELECT state FROM messages WHERE id = ?", now_id) == [["sent"]]

    restarted = start_herald("--store", database, "--grace-seconds", "0", data_dir=str(tmp_path / "other-data"))
    try:
        api = Api(stubs, restarted.address)
        assert api.get(now_id).message.state == api.t.MessageState.Value("MESSAGE_STATE_SENT")
        assert api.get(again.message_id).message.state == api.t.MessageState.Value("MESSAGE_STATE_CANCELLED")
        api.channel.close()
    finally:
        assert restarted.stop() == 0


class PostgresCrashRun(CrashRun):
    """test_crash_delivery.py's run with the store in PostgreSQL."""

    def __init__(self, url, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.url = url
        self.store_args = ["--store", url]

    def rows(self, sql, *params):
        return [tuple(row) for row in psql(self.url, sql, *map(str, params))]


def test_kill_9_during_delivery_loses_nothing_and_resends_nothing(stubs, tmp_path, database):
    # 800 messages: more than one life's 512 dispatch slots, so a later life
    # still has pushes to send (with single-statement claims and marks, the
    # first life handed all 400 of a smaller run over before its kill).
    run = PostgresCrashRun(database, herald_binary(), stubs, str(tmp_path), users=20, per_user=40, devices=2, delay_ms=20)
    try:
        figures = run.run(kills=3)
    finally:
        run.stop()
    print(figures)
    assert figures["kills"] >= 2, figures
    assert figures["duplicates"] == 0, figures
    assert figures["lost"] == 0, figures
    assert figures["delivered_but_failed"] == 0, figures
    assert figures["failed"] == 0, figures
    assert (figures["never_handed_over_then_delivered"] + figures["never_handed_over_then_unconfirmed"]
            == figures["never_handed_over"]), figures
    assert figures["sent"] == figures["messages"], figures
