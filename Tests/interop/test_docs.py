"""The "For the app developer" payloads (docs/APP-CONTRACT.md) are what Herald
sends: the same Schedule delivered through the bundled simulator gives the
alert (fallback), handoff and revoke payloads the page shows (the simulator's
record re-serializes JSON, so those compare as values; Render gives the
alert's exact bytes), and every ctx_ key Herald writes is in its table."""
from __future__ import annotations

import datetime as dt
import json
import pathlib
import re
import time

import grpc
import pytest

from conftest import ROOT, start_herald
from test_delivery import Record

BUNDLE = "com.example.shop"
KEY = "order-A-10023-shipped"
TOKEN = "e5" * 32


def app_section() -> str:
    """docs/APP-CONTRACT.md, the "For the app developer" page, whole."""
    text = (ROOT / "docs" / "APP-CONTRACT.md").read_text()
    assert text.startswith("# For the app developer\n"), "docs/APP-CONTRACT.md lost its heading"
    return text


def readme_payloads() -> list[str]:
    return re.findall(r"```json\n(.*?)\n```", app_section(), re.S)


@pytest.fixture
def env(stubs, tmp_path):
    record = Record(str(tmp_path / "apns-sim.jsonl"))
    server = start_herald("--grace-seconds", "0", "--sim-record", record.path, data_dir=str(tmp_path / "data"))
    channel = grpc.insecure_channel(server.address)
    push = stubs.push_pb2_grpc.PushServiceStub(channel)
    devices = stubs.device_pb2_grpc.DeviceServiceStub(channel)
    t, d = stubs.types_pb2, stubs.device_pb2
    devices.RegisterDevice(d.RegisterDeviceRequest(
        bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id="u1", device_token=TOKEN, locale="en",
        environment=t.APNS_ENVIRONMENT_SANDBOX), timeout=10)
    yield push, record
    channel.close()
    assert server.stop() == 0


def schedule(stubs, push, key, window_seconds):
    t, p = stubs.types_pb2, stubs.push_pb2
    end = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=window_seconds)
    return push.Schedule(p.ScheduleRequest(
        bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id="u1", campaign_id="shipping", idempotency_key=key,
        delivery_method=t.DELIVERY_METHOD_CONTEXT_AWARE, target_delivery_time=end.isoformat(),
        content=t.Content(title=t.LocalizedText(text="Your order has shipped"),
                          body=t.LocalizedText(text="Arriving Thursday"), sound="default",
                          image_url="https://cdn.example.com/a10023.jpg",
                          user_info={"order_id": "A-10023"})), timeout=10)




def test_readme_handoff_and_fallback_are_the_real_payloads(stubs, env):
    push, record = env
    alert, handoff, revoke = readme_payloads()[:3]
    schedule(stubs, push, KEY, 1.5)
    first, second = record.wait_for(lambda d: d["payload"].get("ctx_idempotency_key") == KEY, count=2)
    assert first["headers"]["apns-push-type"] == "background"
    assert first["headers"]["apns-priority"] == "5"
    window_end = first["payload"]["ctx_window_end"]
    assert first["payload"] == json.loads(handoff.replace("2026-11-23T18:00:00Z", window_end))
    assert second["headers"]["apns-push-type"] == "alert"
    assert second["payload"] == json.loads(alert)


def test_readme_alert_is_what_render_returns(stubs, env):
    push, _ = env
    t, p = stubs.types_pb2, stubs.push_pb2
    rendered = push.Render(p.RenderRequest(
        bundle_id=BUNDLE, platform=t.PLATFORM_IOS, idempotency_key=KEY,
        content=t.Content(title=t.LocalizedText(text="Your order has shipped"),
                          body=t.LocalizedText(text="Arriving Thursday"), sound="default",
                          image_url="https://cdn.example.com/a10023.jpg",
                          user_info={"order_id": "A-10023"})), timeout=10)
    assert rendered.apns.payload_json == readme_payloads()[0]


def test_readme_revoke_is_the_real_payload(stubs, env):
    push, record = env
    t, p, r = stubs.types_pb2, stubs.push_pb2, stubs.read_pb2
    key = "order-A-10024-shipped"
    schedule(stubs, push, key, 60)
    record.wait_for(lambda d: d["payload"].get("ctx_idempotency_key") == key)
    deadline = time.monotonic() + 10
    while push.GetMessage(r.GetMessageRequest(bundle_id=BUNDLE, idempotency_key=key),
                          timeout=10).message.state != t.MESSAGE_STATE_HANDED_OFF:
        assert time.monotonic() < deadline, "the handoff was never recorded"
        time.sleep(0.02)
    assert push.Cancel(p.CancelRequest(bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id="u1",
                                       campaign_id="shipping", idempotency_key=key), timeout=10).cancelled
    (sent,) = record.wait_for(lambda d: d["payload"].get("ctx_revoke") == key)
    assert sent["headers"]["apns-push-type"] == "background"
    assert sent["payload"] == json.loads(readme_payloads()[2].replace(KEY, key))


def test_every_ctx_key_herald_writes_is_documented():
    written = set()
    for path in (ROOT / "Sources").rglob("*.swift"):
        written |= set(re.findall(r'(ctx_[a-z_]+)', path.read_text()))
    written.discard("ctx_")
    table = app_section()
    documented = set(re.findall(r"^\| `(ctx_[a-z_]+)` \|", table, re.M))
    assert written and written == documented, (written, documented)


def test_no_absolute_machine_paths_in_the_repository():
    """Scripts and documents name paths relative to the checkout (bench
    scripts use the repository's own .venv), never one machine's."""
    import subprocess

    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    pattern = re.compile(rb"(?<![\w.~-])(/work/|/home/[a-z]|/root/|/Users/|/opt/swift)")
    hits = []
    for name in files.decode().split("\0"):
        path = ROOT / name
        if not name or not path.is_file() or path.is_symlink() or path == pathlib.Path(__file__):
            continue
        for number, line in enumerate(path.read_bytes().splitlines(), 1):
            if pattern.search(line):
                hits.append(f"{name}:{number}: {line.decode(errors='replace').strip()[:120]}")
    assert not hits, "\n".join(hits)
