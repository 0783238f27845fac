"""The `herald` client subcommands (issue 28 item 4) against the real binary:
the same debug binary is the server and the client, for every subcommand,
then the failures a person meets first (nothing listening, a name that does
not resolve, a wrong token, TLS trust), each with its exit status
(10 + the gRPC code; 1 local; 64 usage) and a message naming what to do."""
from __future__ import annotations

import json
import os
import socket
import subprocess

import pytest

from conftest import herald_binary, start_herald
from test_tls import make_pki

TOKEN = "cli-token-0123456789abcdef"
OTHER = "other-token-0123456789abcdef"
DEVICE = "ab" * 32


def herald(*args: str, address: str | None = None, token: str | None = None, timeout: float = 60,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Runs `herald ARGS` as a client; HERALD_ADDRESS/HERALD_TOKEN from the arguments only."""
    environment = {k: v for k, v in os.environ.items() if k not in ("HERALD_ADDRESS", "HERALD_TOKEN")}
    if address:
        environment["HERALD_ADDRESS"] = address
    if token:
        environment["HERALD_TOKEN"] = token
    environment.update(env or {})
    return subprocess.run([herald_binary(), *args], capture_output=True, text=True, timeout=timeout, env=environment)


def ok_json(result: subprocess.CompletedProcess):
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return json.loads(result.stdout)


@pytest.fixture
def secured(tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text(f"cli {TOKEN} com.example.app\nother {OTHER} com.other.app\n")
    os.chmod(tokens, 0o600)
    server = start_herald("--tokens-file", str(tokens), "--grace-seconds", "0")
    yield server
    assert server.stop() == 0
    assert not any(TOKEN in line for line in server.stderr_lines), "a token was logged"


def test_every_subcommand_against_the_real_server(secured):
    run = lambda *args: herald(*args, address=secured.address, token=TOKEN)  # noqa: E731

    status = ok_json(run("status", "--json"))
    assert status["serving"] == "SERVING_STATE_SERVING"
    assert status["store"]["kind"] == "sqlite"
    table = run("status")
    assert table.returncode == 0 and "serving:" in table.stdout and "serving" in table.stdout.split("serving:")[1]

    assert ok_json(run("register", "--user", "alice", "--device-token", DEVICE, "--json")) == {"created": True}

    scheduled = ok_json(run("schedule", "--user", "alice", "--key", "flow-1", "--campaign", "cli",
                            "--title", "Hallo", "--body", "Welt", "--json"))
    assert scheduled["state"] == "MESSAGE_STATE_SCHEDULED"
    assert scheduled["idempotencyKey"] == "flow-1"
    assert scheduled["deliveryMethod"] == "DELIVERY_METHOD_TRADITIONAL"
    message_id = scheduled["messageId"]

    # Waits for the send on the event stream itself (no sleeps): the first `sent` event.
    sent = herald("events", "--from-start", "--follow", "--kind", "sent", "--count", "1",
                  address=secured.address, token=TOKEN, timeout=60)
    assert sent.returncode == 0, sent.stderr
    assert f" sent message={message_id} key=flow-1 user=alice campaign=cli device={DEVICE}" in sent.stdout

    got = ok_json(run("get", "--key", "flow-1", "--json"))
    assert got["message"]["messageId"] == message_id
    assert got["message"]["state"] == "MESSAGE_STATE_SENT"
    assert [d["deviceToken"] for d in got["devices"]] == [DEVICE]
    assert got["devices"][0]["outcome"] == "DEVICE_OUTCOME_SENT"
    table = run("get", "--id", message_id)
    assert table.returncode == 0 and "message.state:" in table.stdout and "sent" in table.stdout
    assert "devices (1):" in table.stdout and DEVICE in table.stdout

    listed = ok_json(run("list", "--user", "alice", "--state", "sent", "--json"))
    assert [m["messageId"] for m in listed["messages"]] == [message_id]
    assert ok_json(run("list", "--user", "alice", "--state", "cancelled", "--json"))["messages"] == []

    report = ok_json(run("report", "--campaign", "cli", "--json"))
    cohort, = report["cohorts"]
    assert cohort["cohort"] == "DELIVERY_METHOD_TRADITIONAL"
    assert int(cohort["scheduled"]) == 1 and int(cohort["sent"]) == 1

    rendered = ok_json(run("render", "--title", "Hi", "--body", "There", "--json"))
    assert json.loads(rendered["apns"]["payloadJson"])["aps"]["alert"] == {"title": "Hi", "body": "There"}
    android = ok_json(run("render", "--title", "Hi", "--body", "There", "--platform", "android", "--json"))
    assert json.loads(android["fcm"]["messageJson"])["message"]["notification"]["title"] == "Hi"

    later = ok_json(run("schedule", "--user", "alice", "--key", "flow-2", "--campaign", "cli",
                        "--title", "Later", "--body", "Maybe", "--after", "3600", "--json"))
    assert later["state"] == "MESSAGE_STATE_SCHEDULED"
    cancelled = ok_json(run("cancel", "--user", "alice", "--key", "flow-2", "--campaign", "cli", "--json"))
    assert cancelled == {"cancelled": True, "state": "MESSAGE_STATE_CANCELLED"}
    assert ok_json(run("cancel", "--user", "alice", "--key", "flow-2", "--campaign", "cli", "--json"))["cancelled"]
    assert ok_json(run("cancel", "--user", "alice", "--key", "flow-1", "--campaign", "cli", "--json")) == {
        "cancelled": False, "state": "MESSAGE_STATE_SENT"}
    missing = run("cancel", "--user", "alice", "--key", "nope", "--campaign", "cli")
    assert missing.returncode == 15, missing.stderr  # 10 + NOT_FOUND
    assert missing.stderr.startswith("herald: error: NOT_FOUND: ") and missing.stdout == ""

    # (Status counts come from a periodic snapshot: not asserted here, so no waiting.)
    assert isinstance(ok_json(run("status", "--json"))["messages"], list)

    # events with a cursor: every later event exactly once, in order.
    everything = run("events", "--from-start", "--json", "--idle", "3")  # stops 3 to 6 s after the last event
    assert everything.returncode == 0, everything.stderr
    events = [json.loads(line) for line in everything.stdout.splitlines()]
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "EVENT_KIND_SCHEDULED" and "EVENT_KIND_SENT" in kinds and "EVENT_KIND_CANCELLED" in kinds
    resumed = run("events", "--cursor", events[0]["cursor"], "--json", "--follow", "--count", str(len(events) - 1))
    assert resumed.returncode == 0, resumed.stderr
    assert [json.loads(line) for line in resumed.stdout.splitlines()] == events[1:]
    lines = run("events", "--cursor", events[-2]["cursor"], "--follow", "--count", "1").stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith(events[-1]["cursor"] + " ")

    assert ok_json(run("unregister", "--device-token", DEVICE, "--json")) == {"removed": True}


def test_invalid_arguments_and_usage_errors_have_their_exit_status(secured):
    bad = herald("schedule", "--user", "u", "--title", "t", "--body", "b", "--hours", "500",
                 address=secured.address, token=TOKEN)
    assert bad.returncode == 13, bad.stderr  # 10 + INVALID_ARGUMENT
    assert "INVALID_ARGUMENT" in bad.stderr and "deliver_within_hours" in bad.stderr
    cursor = herald("events", "--cursor", "garbage", address=secured.address, token=TOKEN)
    assert cursor.returncode == 13 and "cursor" in cursor.stderr
    usage = herald("get", address=secured.address, token=TOKEN)
    assert usage.returncode == 64 and "exactly one of --id and --key" in usage.stderr
    both = herald("events", "--cursor", "x", "--from-start", address=secured.address, token=TOKEN)
    assert both.returncode == 64
    help_text = herald("schedule", "--help")
    assert help_text.returncode == 0
    for line in ("13   INVALID_ARGUMENT", "24   UNAVAILABLE", "26   UNAUTHENTICATED"):
        assert line in help_text.stdout


def test_a_wrong_token_is_unauthenticated_and_says_where_the_token_came_from(secured, tmp_path):
    wrong = herald("list", "--user", "alice", address=secured.address, token="wrong-token-0123456789")
    assert wrong.returncode == 26, wrong.stderr  # 10 + UNAUTHENTICATED
    assert "UNAUTHENTICATED" in wrong.stderr and "HERALD_TOKEN" in wrong.stderr
    assert "wrong-token" not in wrong.stderr
    none = herald("list", "--user", "alice", address=secured.address)
    assert none.returncode == 26 and "no token was given" in none.stderr
    token_file = tmp_path / "token"
    token_file.write_text("wrong-token-0123456789\n")
    from_file = herald("list", "--user", "alice", "--token-file", str(token_file), address=secured.address)
    assert from_file.returncode == 26 and f"--token-file {token_file}" in from_file.stderr
    token_file.write_text(TOKEN + "\n")
    assert herald("list", "--user", "alice", "--token-file", str(token_file), address=secured.address).returncode == 0
    other = herald("render", "--title", "t", "--body", "b", address=secured.address, token=OTHER)
    assert other.returncode == 17, other.stderr  # 10 + PERMISSION_DENIED
    assert "PERMISSION_DENIED" in other.stderr
    # Status needs no token.
    assert herald("status", address=secured.address).returncode == 0


def free_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_nothing_listening_names_the_address_and_what_to_do():
    port = free_port()
    result = herald("status", "--addr", f"127.0.0.1:{port}")
    assert result.returncode == 24, result.stderr  # 10 + UNAVAILABLE
    assert f"127.0.0.1:{port}" in result.stderr and "connection refused" in result.stderr
    assert "herald serve" in result.stderr and "HERALD_ADDRESS" in result.stderr
    from_env = herald("status", address=f"127.0.0.1:{port}")
    assert from_env.returncode == 24 and f"127.0.0.1:{port}" in from_env.stderr


def test_a_name_that_does_not_resolve_says_so():
    result = herald("status", "--addr", "no-such-host.invalid:50051")
    assert result.returncode == 24, result.stderr
    assert "cannot resolve" in result.stderr and "no-such-host.invalid" in result.stderr


@pytest.mark.parametrize("address", ["http://127.0.0.1:50051", "127.0.0.1:0", "127.0.0.1:70000", ":50051", "::1"])
def test_malformed_addresses_are_local_errors(address):
    result = herald("status", "--addr", address)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith("herald: error: ") and result.stdout == ""


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("cli-pki"))


@pytest.fixture(scope="module")
def other_pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("cli-other-pki"))


def test_tls_trust_and_mtls(pki, other_pki):
    server = start_herald("--tls-cert", pki["server_crt"], "--tls-key", pki["server_key"])
    try:
        trusted = herald("status", "--json", "--ca-file", pki["ca_crt"], address=server.address)
        assert ok_json(trusted)["serving"] == "SERVING_STATE_SERVING"
        wrong_ca = herald("status", "--ca-file", other_pki["ca_crt"], address=server.address)
        assert wrong_ca.returncode == 24, wrong_ca.stderr
        assert "not trusted" in wrong_ca.stderr and other_pki["ca_crt"] in wrong_ca.stderr
        cleartext = herald("status", address=server.address)
        assert cleartext.returncode == 24, cleartext.stderr
        assert "--tls" in cleartext.stderr
        missing = herald("status", "--ca-file", "/nonexistent/ca.pem", address=server.address)
        assert missing.returncode == 1 and "/nonexistent/ca.pem" in missing.stderr
    finally:
        assert server.stop() == 0
    plain = start_herald()
    try:
        result = herald("status", "--ca-file", pki["ca_crt"], address=plain.address)
        assert result.returncode == 24, result.stderr
        assert "TLS" in result.stderr
    finally:
        assert plain.stop() == 0
    mtls = start_herald("--tls-cert", pki["server_crt"], "--tls-key", pki["server_key"], "--tls-client-ca", pki["ca_crt"])
    try:
        with_cert = herald("status", "--json", "--ca-file", pki["ca_crt"], "--client-cert", pki["client_crt"],
                           "--client-key", pki["client_key"], address=mtls.address)
        assert ok_json(with_cert)["serving"] == "SERVING_STATE_SERVING"
        without = herald("status", "--ca-file", pki["ca_crt"], address=mtls.address)
        assert without.returncode == 24, without.stderr
        half = herald("status", "--ca-file", pki["ca_crt"], "--client-cert", pki["client_crt"], address=mtls.address)
        assert half.returncode == 1 and "--client-key" in half.stderr
    finally:
        assert mtls.stop() == 0


def test_list_all_follows_every_page_and_json_is_one_document_a_page(secured):
    for index in range(3):
        ok_json(herald("schedule", "--user", "bob", "--key", f"page-{index}", "--title", "t", "--body", "b",
                       "--after", "3600", "--json", address=secured.address, token=TOKEN))
    result = herald("list", "--user", "bob", "--page-size", "1", "--all", "--json", address=secured.address, token=TOKEN)
    assert result.returncode == 0, result.stderr
    pages = [json.loads(line) for line in result.stdout.splitlines()]
    keys = [m["idempotencyKey"] for page in pages for m in page["messages"]]
    assert sorted(keys) == ["page-0", "page-1", "page-2"] and len(pages) >= 3
    assert pages[-1]["nextPageToken"] == ""
    one = herald("list", "--user", "bob", "--page-size", "1", "--json", address=secured.address, token=TOKEN)
    assert len(one.stdout.splitlines()) == 1 and json.loads(one.stdout)["nextPageToken"]


def test_translations_user_info_and_overrides_reach_the_payload(secured):
    result = herald("render", "--title-in", "de=Hallo", "--title-in", "en=Hello", "--body-in", "de=Welt",
                    "--body-in", "en=World", "--default-locale", "en", "--locale", "de-CH",
                    "--user-info", '{"deep": {"a": [1, true, null, "x"]}, "n": 2.5}',
                    "--ios", '{"aps": {"sound": "ping.caf"}}', "--json", address=secured.address, token=TOKEN)
    rendered = ok_json(result)
    payload = json.loads(rendered["apns"]["payloadJson"])
    assert payload["aps"]["alert"] == {"title": "Hallo", "body": "Welt"} and payload["aps"]["sound"] == "ping.caf"
    assert payload["deep"] == {"a": [1, True, None, "x"]} and payload["n"] == 2.5
    assert rendered["resolvedLocale"] == "de"
    for args, needle in ((["--title-in", "de"], "LOCALE=TEXT"), (["--title", "t", "--user-info", "[1]"], "JSON object"),
                         (["--title", "t", "--ios", "{bad"], "--ios: invalid JSON")):
        bad = herald("render", *args, "--body", "b", address=secured.address, token=TOKEN)
        assert bad.returncode == 1 and needle in bad.stderr, bad.stderr
    both = herald("render", "--title", "t", "--title-in", "de=x", "--body", "b", address=secured.address, token=TOKEN)
    assert both.returncode == 64
    reserved = herald("render", "--title", "t", "--body", "b", "--user-info", '{"aps": 1}',
                      address=secured.address, token=TOKEN)
    assert reserved.returncode == 13 and "user_info" in reserved.stderr


def test_events_follow_ends_unavailable_when_the_server_drains(secured):
    environment = {k: v for k, v in os.environ.items() if k not in ("HERALD_ADDRESS", "HERALD_TOKEN")}
    environment.update(HERALD_ADDRESS=secured.address, HERALD_TOKEN=TOKEN)
    tail = subprocess.Popen([herald_binary(), "events", "--from-start", "--follow"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=environment)
    try:
        ok_json(herald("schedule", "--user", "carol", "--key", "drain-1", "--title", "t", "--body", "b", "--after", "3600",
                       "--json", address=secured.address, token=TOKEN))
        first = tail.stdout.readline()  # the stream is live: the scheduled event arrives
        assert " scheduled " in first and "key=drain-1" in first, first
        assert secured.stop() == 0
        _, stderr = tail.communicate(timeout=60)
        assert tail.returncode == 24, stderr  # UNAVAILABLE: rerun with --cursor
        assert "UNAVAILABLE" in stderr
    finally:
        if tail.poll() is None:
            tail.kill()
            tail.wait()


class SilentPeer:
    """A loopback listener that accepts and then says nothing (`h2`: it
    answers the HTTP/2 preface and SETTINGS, then never a request)."""

    def __init__(self, h2: bool):
        import threading
        self.h2 = h2
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        self.connections: list[socket.socket] = []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        import threading
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections.append(connection)
            if self.h2:
                threading.Thread(target=self.speak_h2, args=(connection,), daemon=True).start()

    def speak_h2(self, connection):
        import h2.config
        import h2.connection
        peer = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False))
        peer.initiate_connection()
        try:
            connection.sendall(peer.data_to_send())
            while data := connection.recv(65536):
                peer.receive_data(data)  # requests arrive; none is answered
                connection.sendall(peer.data_to_send())
        except OSError:
            return

    def close(self):
        self.listener.close()
        for connection in self.connections:
            connection.close()


@pytest.mark.parametrize("h2,code,needle", [(False, 24, "no HTTP/2 answer"), (True, 14, "DEADLINE_EXCEEDED")])
def test_a_peer_that_never_answers_is_bounded_by_the_timeout(h2, code, needle):
    peer = SilentPeer(h2)
    try:
        result = herald("status", "--addr", f"127.0.0.1:{peer.port}", "--timeout", "1", timeout=30)
        assert result.returncode == code, result.stderr  # 10 + the gRPC code
        assert needle in result.stderr
        if not h2:
            assert f"127.0.0.1:{peer.port}" in result.stderr and "--tls" in result.stderr
    finally:
        peer.close()
