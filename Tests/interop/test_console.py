"""The operator console (SPEC §8) in a real browser against the real binary:
headless Chromium loads every page, the tests read what a person would see
from the rendered DOM (`--dump-dom`), keep a screenshot per page in
`.build/test-artefacts/console/`, and `tidy -errors` validates every page.

Basic auth: Chromium takes the credentials in the URL
(`http://console:TOKEN@127.0.0.1:PORT/...`): it asks, gets 401 with the
challenge, and retries with them. Hostile inputs and refusals first; every
wait is for a condition, bounded by a deadline; every Chromium run by a
timeout. Without Chromium (or tidy) the tests skip, except under CI=true,
where they fail."""
from __future__ import annotations

import base64
import os
import pathlib
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from html.parser import HTMLParser

import grpc
import pytest

from conftest import ROOT, start_herald

BUNDLE = "com.example.console"
OTHER = "com.other.console"
APP_TOKEN = "console-app-token-0123456789"
OTHER_TOKEN = "console-other-token-0123456789"
TOKENS = f"""\
app    {APP_TOKEN}    {BUNDLE}
other  {OTHER_TOKEN}  {OTHER}
"""
AUTH = [("authorization", f"Token {APP_TOKEN}")]
BAD_TOKEN = "b2" * 32
ARTEFACTS = ROOT / ".build" / "test-artefacts" / "console"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
TIDY = shutil.which("tidy")
BROWSER_TIMEOUT = 90


def require_tools():
    missing = [name for name, path in (("chromium", CHROMIUM), ("tidy", TIDY)) if not path]
    if missing:
        reason = f"{', '.join(missing)} not installed (scripts/bootstrap.sh --test installs them)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def chromium(*args: str) -> str:
    """One headless Chromium run, bounded; its stdout."""
    profile = tempfile.mkdtemp(prefix="chromium-")
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
           f"--user-data-dir={profile}", "--hide-scrollbars", *args]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=BROWSER_TIMEOUT)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def dom(url: str) -> str:
    return chromium("--dump-dom", url)


def screenshot(url: str, name: str):
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTEFACTS / f"{name}.png"
    chromium("--window-size=1200,2400", f"--screenshot={path}", url)
    assert path.stat().st_size > 1000


def fetch(port: int, path: str, token: str | None = None) -> tuple[int, dict[str, str], bytes]:
    """A GET through urllib (no browser): status, headers (lower-case), body."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if token:
        request.add_header("Authorization", "Basic " + base64.b64encode(f"console:{token}".encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, {k.lower(): v for k, v in reply.headers.items()}, reply.read()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def raw(port: int, request: bytes) -> tuple[int, bytes]:
    """One raw HTTP/1.1 exchange; (status, whole answer) — for what urllib would tidy up."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        try:
            sock.sendall(request)
        except (BrokenPipeError, ConnectionResetError):
            pass
        data = b""
        try:
            while chunk := sock.recv(65536):
                data += chunk
        except ConnectionResetError:
            pass
    return int(data.split(b" ", 2)[1]), data


def tidy_clean(body: bytes, name: str):
    path = ARTEFACTS / f"{name}.html"
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body)
    done = subprocess.run([TIDY, "-errors", "-q", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{name}: {done.stderr}"


class Elements(HTMLParser):
    """Collects (tag, attributes, text) of every element, and text by id."""

    def __init__(self, html: str):
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text_by_id: dict[str, str] = {}
        self.rows: dict[str, list[list[str]]] = {}
        self._open_ids: list[tuple[str, str, list[str]]] = []
        self._table: list[str] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attributes = {k: v or "" for k, v in attrs}
        self.tags.append((tag, attributes))
        if tag == "table":
            self._table.append(attributes.get("id", ""))
        elif tag == "tr" and self._table:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        if "id" in attributes and tag not in ("input",):
            self._open_ids.append((tag, attributes["id"], []))

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table:
            self.rows.setdefault(self._table[-1], []).append(self._row)
            self._row = None
        elif tag == "table" and self._table:
            self._table.pop()
        if self._open_ids and self._open_ids[-1][0] == tag:
            _, ident, parts = self._open_ids.pop()
            self.text_by_id[ident] = "".join(parts).strip()

    def handle_data(self, data):
        for _, _, parts in self._open_ids:
            parts.append(data)
        if self._cell is not None:
            self._cell.append(data)

    def count(self, tag: str, **attributes) -> int:
        return sum(1 for t, a in self.tags if t == tag and all(a.get(k) == v for k, v in attributes.items()))


@pytest.fixture
def console(stubs, tmp_path):
    require_tools()
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKENS)
    os.chmod(tokens, 0o600)
    server = start_herald("--grace-seconds", "0", "--tokens-file", str(tokens), "--admin-port", "0",
                          "--sim-bad-token", BAD_TOKEN, data_dir=str(tmp_path / "data"))
    channel = grpc.insecure_channel(server.address)
    server.push = stubs.push_pb2_grpc.PushServiceStub(channel)
    server.devices = stubs.device_pb2_grpc.DeviceServiceStub(channel)
    server.s = stubs
    yield server
    channel.close()
    assert server.stop() == 0


def url(server, path: str, token: str | None = APP_TOKEN) -> str:
    credentials = f"console:{token}@" if token else ""
    return f"http://{credentials}127.0.0.1:{server.admin_port}{path}"


# MARK: hostile inputs and refusals


def test_hostile_lookup_inputs_are_escaped_or_refused(console):
    port = console.admin_port
    script = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>"
    quoted = urllib.request.quote(script, safe="")
    status, headers, body = fetch(port, f"/console/message?bundle={BUNDLE}&key={quoted}", APP_TOKEN)
    assert status == 200
    assert "default-src 'none'" in headers["content-security-policy"]
    assert b"<script>alert" not in body and b"<img src=x" not in body
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&gt;&lt;img" in body
    tidy_clean(body, "hostile-key")
    # In the browser: only the console's own script element, no injected image, the text shown as text.
    page = Elements(dom(url(console, f"/console/message?bundle={BUNDLE}&key={quoted}")))
    assert page.count("script") == 1 and page.count("img") == 0
    assert script in page.text_by_id["not-found"]
    # Over the limits of the ids: refused, naming the limit.
    status, _, body = fetch(port, f"/console/message?bundle={BUNDLE}&id={'x' * 65}", APP_TOKEN)
    assert status == 400 and b"the limit is 64" in body
    status, _, body = fetch(port, f"/console/message?bundle={BUNDLE}&id={'x' * 5000}", APP_TOKEN)
    assert status == 400 and b"the limit is 1024" in body
    # NUL, bad UTF-8, broken escapes, repeated and too many parameters.
    for query, reason in [("bundle=a%00b", b"contains NUL"), ("bundle=%ff%fe", b"not valid UTF-8"),
                          ("bundle=%g1", b"malformed percent-escape"), ("bundle=a&bundle=b", b"given twice"),
                          ("&".join(f"p{i}=1" for i in range(20)), b"too many query parameters")]:
        status, _, body = fetch(port, f"/console/message?{query}", APP_TOKEN)
        assert status == 400 and reason in body, (query, status, body[:300])
    # A 1 MB value: refused with 414 and a sentence, before it is buffered.
    status, answer = raw(port, b"GET /console/message?bundle=" + b"a" * 1024 * 1024 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 414 and b"at most 8192 bytes" in answer
    # Path traversal and other methods.
    status, answer = raw(port, b"GET /console/../metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert status == 404
    status, answer = raw(port, b"GET /console/%2e%2e/metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert status == 404
    status, answer = raw(port, b"POST /console/message HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    assert status == 405 and b"Allow: GET, HEAD" in answer
    # Hostile data stored through the API (a user id and a key with markup) is shown as text.
    evil_user, evil_key = "<script>alert(3)</script>", "k\"><svg onload=alert(4)>"
    register(console, evil_user, "ab" * 32)
    reply = schedule(console, evil_user, evil_key, "evil", console.s.types_pb2.DELIVERY_METHOD_TRADITIONAL)
    page = Elements(dom(url(console, f"/console/message?bundle={BUNDLE}&id={reply.message_id}")))
    assert page.count("script") == 1 and page.count("svg") == 0
    fields = {row[0]: row[1] for row in page.rows["message-table"]}
    assert fields["User"] == evil_user and fields["Idempotency key"] == evil_key
    link = next(a for t, a in page.tags if t == "a" and a.get("id") == "user-link")
    listed = Elements(dom(url(console, link["href"])))
    assert [row[0] for row in listed.rows["user-messages"][1:]] == [reply.message_id]
    assert listed.count("script") == 1
    # The admin endpoints are unchanged, and the server still answers.
    assert fetch(port, "/healthz")[0:3:2] == (200, b"ok\n")
    assert fetch(port, "/metrics")[0] == 200


def test_bundle_pages_need_a_token_that_allows_the_bundle(console):
    port = console.admin_port
    for path in (f"/console/message?bundle={BUNDLE}&id=x", f"/console/campaigns?bundle={BUNDLE}&campaign=c",
                 f"/console/events?bundle={BUNDLE}", f"/console/messages?bundle={BUNDLE}&user=u"):
        status, headers, _ = fetch(port, path)
        assert status == 401 and headers["www-authenticate"].startswith("Basic realm="), path
        status, _, body = fetch(port, path, OTHER_TOKEN)
        assert status == 403 and b"does not allow bundle" in body, path
        status, headers, _ = fetch(port, path, "not-a-token")
        assert status == 401, path
        status, _, _ = fetch(port, path, APP_TOKEN)
        assert status == 200, path
    # In the browser, another bundle's token sees the refusal, not the data.
    page = Elements(dom(url(console, f"/console/events?bundle={BUNDLE}", OTHER_TOKEN)))
    assert "does not allow bundle" in page.text_by_id["refusal"] and "events" not in page.rows
    # The overview follows Status's rule: without a token, counts only.
    status, _, body = fetch(port, "/")
    assert status == 200 and b"Version" not in body and b"pool-table" not in body and b"Counts only" in body
    status, _, body = fetch(port, "/", APP_TOKEN)
    assert status == 200 and b"Version" in body and b"pool-table" in body
    # `?signin=1` challenges an anonymous browser (so it sends the token it has, or prompts for one).
    status, headers, _ = fetch(port, "/?signin=1")
    assert status == 401 and headers["www-authenticate"].startswith("Basic realm=")
    page = Elements(dom(url(console, "/?signin=1", OTHER_TOKEN)))
    assert "Version" in {row[0] for row in page.rows["serving-table"]} and "pool-table" in page.rows


# MARK: the pages with real data


def register(server, user: str, token: str):
    t, d = server.s.types_pb2, server.s.device_pb2
    server.devices.RegisterDevice(d.RegisterDeviceRequest(
        bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=user, device_token=token, locale="en", timezone="UTC",
        environment=t.APNS_ENVIRONMENT_SANDBOX), metadata=AUTH, timeout=10)


def schedule(server, user: str, key: str, campaign: str, method):
    t, p = server.s.types_pb2, server.s.push_pb2
    return server.push.Schedule(p.ScheduleRequest(
        bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=user, campaign_id=campaign, idempotency_key=key,
        delivery_method=method, deliver_within_hours=1,
        content=t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="There"))), metadata=AUTH, timeout=30)


def wait_state(server, message_id: str, states: set[str], timeout: float = 60):
    t, r = server.s.types_pb2, server.s.read_pb2
    deadline = time.monotonic() + timeout
    while True:
        reply = server.push.GetMessage(r.GetMessageRequest(bundle_id=BUNDLE, message_id=message_id), metadata=AUTH, timeout=10)
        if t.MessageState.Name(reply.message.state) in states:
            return reply
        assert time.monotonic() < deadline, reply
        time.sleep(0.05)


def test_every_page_shows_what_the_server_knows(console):
    s = console.s
    t, p, r = s.types_pb2, s.push_pb2, s.read_pb2
    # An A/B campaign: 32+ delivered messages per cohort; context-aware opened far more.
    cohorts = {t.DELIVERY_METHOD_CONTEXT_AWARE: [], t.DELIVERY_METHOD_TRADITIONAL: []}
    n = 0
    while min(len(v) for v in cohorts.values()) < 32:
        user, token = f"ab-{n}", f"{n + 1:064x}"
        register(console, user, token)
        reply = schedule(console, user, f"k-ab-{n}", "spring", t.DELIVERY_METHOD_UNSPECIFIED)
        assert reply.ab_test
        cohorts[reply.delivery_method].append((user, token, reply))
        n += 1
        assert n < 400
    for group in cohorts.values():
        for _, _, reply in group:
            wait_state(console, reply.message_id, {"MESSAGE_STATE_HANDED_OFF", "MESSAGE_STATE_SENT"})
    for method, opened in ((t.DELIVERY_METHOD_CONTEXT_AWARE, 24), (t.DELIVERY_METHOD_TRADITIONAL, 4)):
        for user, token, reply in cohorts[method][:opened]:
            console.push.ReportEvent(p.ReportEventRequest(
                bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=user, idempotency_key=reply.idempotency_key,
                event=p.MESSAGE_EVENT_OPENED, device_token=token), metadata=AUTH, timeout=10)
    # One failing device: the simulator answers 400 BadDeviceToken for it.
    register(console, "failing-user", BAD_TOKEN)
    failing = schedule(console, "failing-user", "k-failing", "failing", t.DELIVERY_METHOD_TRADITIONAL)
    wait_state(console, failing.message_id, {"MESSAGE_STATE_FAILED"})
    report = console.push.CampaignReport(r.CampaignReportRequest(bundle_id=BUNDLE, campaign_id="spring"),
                                         metadata=AUTH, timeout=30)
    ab = report.ab_comparison
    assert ab.ci95_low > 0

    port = console.admin_port
    # The hour's history: sampled every 5 s into 10 s steps; wait (bounded) for the step that holds
    # the provider's answers: every A/B push accepted, the bad token refused.
    accepted = sum(len(v) for v in cohorts.values())
    totals = f"This hour: {accepted} sent, 1 failed."
    deadline = time.monotonic() + 60
    while totals.encode() not in fetch(port, "/", APP_TOKEN)[2]:
        assert time.monotonic() < deadline, fetch(port, "/", APP_TOKEN)[2].decode()[-3000:]
        time.sleep(0.5)
    pages = {
        "overview": "/?signin=1",
        "campaign": f"/console/campaigns?bundle={BUNDLE}&campaign=spring",
        "campaign-form": "/console/campaigns",
        "recent-campaigns": f"/console/campaigns?bundle={BUNDLE}",
        "message": f"/console/message?bundle={BUNDLE}&id={failing.message_id}",
        "message-by-key": f"/console/message?bundle={BUNDLE}&key=k-ab-0",
        "user-messages": f"/console/messages?bundle={BUNDLE}&user=failing-user",
        "events": f"/console/events?bundle={BUNDLE}",
    }
    for name, path in pages.items():
        status, headers, body = fetch(port, path, APP_TOKEN)
        assert status == 200, (name, body[:500])
        assert len(body) <= 100 * 1024, (name, len(body))
        assert headers["content-security-policy"].startswith("default-src 'none'")
        tidy_clean(body, name)
        screenshot(url(console, path), name)

    # Campaign: one bar per cohort row, the verdict computed from the report's own interval.
    campaign = Elements(dom(url(console, pages["campaign"])))
    assert len(campaign.rows["cohort-table"]) - 1 == len(report.cohorts) == 2
    assert campaign.count("rect", **{"class": "bar"}) == len(report.cohorts)
    points = f"{abs(ab.open_rate_difference) * 100:.1f}"
    verdict = campaign.text_by_id["verdict"]
    assert verdict.startswith(f"context-aware opened {points} points more, 95 % interval "), verdict
    assert verdict.endswith(": a real difference")
    assert f"{ab.ci95_low * 100:.1f}–{ab.ci95_high * 100:.1f}" in verdict
    assert campaign.count("circle", **{"class": "estimate"}) == 1 and campaign.count("line", **{"class": "ci"}) == 1
    rows = {row[0]: row for row in campaign.rows["cohort-table"][1:]}
    ca = rows["context_aware (A/B split)"]
    assert ca[2] == str(len(cohorts[t.DELIVERY_METHOD_CONTEXT_AWARE])) and ca[6] == "24"

    # Recent campaigns (from the event log): both, the failing one first, each linked to its report.
    recent = Elements(dom(url(console, pages["recent-campaigns"])))
    listed_campaigns = {row[0]: row for row in recent.rows["recent-campaigns"][1:]}
    assert list(listed_campaigns)[:1] == ["failing"] and "spring" in listed_campaigns
    spring = listed_campaigns["spring"]
    total = sum(len(v) for v in cohorts.values())
    assert spring[2:] == [str(total), str(total), "28", "0"], spring
    assert listed_campaigns["failing"][5] == "1"

    # Message lookup: the failing device's outcome, its reason; the timeline ends FAILED; the user link.
    message = Elements(dom(url(console, pages["message"])))
    devices = message.rows["devices"][1:]
    assert [(d[0], d[1]) for d in devices] == [(BAD_TOKEN, "bad_device_token")]
    assert "BadDeviceToken" in devices[0][2] or devices[0][4] == "400"
    assert message.rows["timeline"][-1][0] == "failed"
    assert message.count("a", id="user-link") == 1
    by_key = Elements(dom(url(console, pages["message-by-key"])))
    assert by_key.rows["devices"][1][1] in ("handed_off", "sent")
    listed = Elements(dom(url(console, pages["user-messages"])))
    assert [row[0] for row in listed.rows["user-messages"][1:]] == [failing.message_id]

    # Events: the last 50, newest first: the failure (the last thing that happened) leads, the opens follow.
    events = Elements(dom(url(console, pages["events"])))
    kinds = [row[1] for row in events.rows["events"][1:]]
    assert len(kinds) == 50 and kinds[0] == "failed" and "opened" in kinds

    # Overview: the counts by state are Status's (read until two Status calls agree around the page).
    deadline = time.monotonic() + 30
    while True:
        before = console.push.Status(p.StatusRequest(), metadata=AUTH, timeout=10)
        overview = Elements(dom(url(console, "/?signin=1")))
        after = console.push.Status(p.StatusRequest(), metadata=AUTH, timeout=10)
        if list(before.messages) == list(after.messages):
            break
        assert time.monotonic() < deadline
    expected = {t.MessageState.Name(c.state).removeprefix("MESSAGE_STATE_").lower(): str(c.count) for c in after.messages}
    shown = {row[0]: row[1] for row in overview.rows["state-counts"][1:]}
    assert {k: v for k, v in shown.items() if v != "0"} == {k: v for k, v in expected.items() if v != "0"}
    assert overview.count("rect", **{"class": "bar"}) == len(shown)
    assert any(row[0] == "apns" for row in overview.rows["pool-table"][1:])
    assert overview.count("svg") >= 4
    assert overview.text_by_id["hour-totals"] == totals
    assert overview.count("polyline", **{"class": "series"}) >= 3  # sends, failures, due lag (lateness too once dispatched)
