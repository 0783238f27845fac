"""Issue 24 items 4 and 5 on the real binary through stock grpcio: the read
side runs under a concurrency bound (past it RESOURCE_EXHAUSTED naming the
setting) while another client's Schedules keep succeeding, and ReportEvent
checks device_token like RegisterDevice and keeps one row per (message,
device, event). Hostile first; every wait is bounded."""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from conftest import start_herald
from test_messages import APP_TOKEN, AUTH, BUNDLE, OK_TOKEN, Api, code_of

TOKENS = f"app {APP_TOKEN} {BUNDLE}\n"


@pytest.fixture
def bounded(stubs, tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKENS)
    os.chmod(tokens, 0o600)
    server = start_herald("--grace-seconds", "0", "--tokens-file", str(tokens),
                          "--max-concurrent-reads", "2", "--max-queued-reads", "4",
                          data_dir=str(tmp_path / "data"))
    client = Api(stubs, server.address, AUTH)
    yield client, server
    client.channel.close()
    assert server.stop() == 0


def test_report_event_refuses_bad_device_tokens_naming_the_field(bounded):
    api, _ = bounded
    p, t = api.p, api.t
    api.register("u1", OK_TOKEN)
    reply = api.schedule("u1", "k-report")

    def event(token):
        return api.push.ReportEvent(p.ReportEventRequest(
            bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id="u1", idempotency_key=reply.idempotency_key,
            event=p.MESSAGE_EVENT_DISPLAYED, device_token=token), metadata=api.md, timeout=30)

    for token in ("a" * ((4 << 20) - 4096), "zz" * 32, "a1" * 31 + "\x00a", "a1" * 10):
        code, details = code_of(lambda: event(token))
        assert code == grpc.StatusCode.INVALID_ARGUMENT, (code, details[:200])
        assert "device_token" in details and len(details) < 2048, details[:300]
    # 1,000 reports of one device: each answers, the message stays small.
    with ThreadPoolExecutor(16) as pool:
        states = list(pool.map(lambda _: event(OK_TOKEN.upper()).state, range(1_000)))
    assert len(states) == 1_000
    got = api.get(bundle_id=BUNDLE, message_id=reply.message_id)
    assert got.ByteSize() < 4096, got.ByteSize()


def test_three_hundred_concurrent_reads_are_bounded_while_schedules_succeed(bounded, stubs):
    api, server = bounded
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda i: api.schedule(f"u{i % 20}", f"seed-{i}", campaign="big"), range(400)))
    writer = Api(stubs, server.address, AUTH)
    reads = [api.push.CampaignReport.future(api.r.CampaignReportRequest(bundle_id=BUNDLE, campaign_id="big"),
                                            metadata=api.md, timeout=60)
             for _ in range(300)]
    slowest = 0.0
    for i in range(20):
        start = time.monotonic()
        writer.schedule("writer", f"w-{i}", campaign="w")
        slowest = max(slowest, time.monotonic() - start)
    codes, refusals = {}, []
    for future in reads:
        try:
            future.result(timeout=60)
            code = grpc.StatusCode.OK
        except grpc.RpcError as error:
            code = error.code()
            refusals.append(error.details())
        codes[code] = codes.get(code, 0) + 1
    writer.channel.close()
    assert set(codes) <= {grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED}, codes
    assert codes.get(grpc.StatusCode.OK, 0) >= 6 and codes.get(grpc.StatusCode.RESOURCE_EXHAUSTED, 0) > 0, codes
    assert all("--max-concurrent-reads" in d for d in refusals), refusals[:3]
    assert slowest < 5.0, f"a Schedule took {slowest:.2f} s during the reads"
    # Once the burst is over, reads are served again.
    assert sum(c.scheduled for c in api.report(bundle_id=BUNDLE, campaign_id="big").cohorts) == 400
