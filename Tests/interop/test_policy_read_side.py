"""Issue 26's read side through stock grpcio against the real binary: the
delivery policy's values (MESSAGE_STATE_SUPPRESSED, DEVICE_OUTCOME_WAITING
with not_before, DEVICE_OUTCOME_SUPPRESSED, TIMELINE_EVENT_DEFERRED and
_SUPPRESSED, the cohorts' deferred and suppressed counts, Status's count of
SUPPRESSED messages), and Schedule's local_send_time and transactional.

No rule holds a push in this build (the dispatcher's holds are the lead's),
so the store's rows a hold and a suppression write are put in the database
while herald is stopped, with the columns schema v9 gives them; herald then
serves them. Hostile requests first. Every wait is for a condition, bounded."""
from __future__ import annotations

import datetime as dt
import os
import sqlite3
import time

import grpc
import pytest

from conftest import start_herald

BUNDLE = "com.example.app"
TOKEN_A, TOKEN_B, TOKEN_C = "a1" * 32, "b2" * 32, "c3" * 32


def later():
    return (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=100)).isoformat()


def request(stubs, key, **fields):
    t, p = stubs.types_pb2, stubs.push_pb2
    return p.ScheduleRequest(
        bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id="u1", campaign_id="camp", idempotency_key=key,
        delivery_method=t.DELIVERY_METHOD_TRADITIONAL, deliver_within_hours=2, deliver_after=later(),
        content=t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="There")), **fields)


@pytest.fixture
def server(tmp_path):
    data = tmp_path / "data"
    process = start_herald("--grace-seconds", "0", data_dir=str(data))
    yield process
    if process.proc.poll() is None:
        assert process.stop() == 0


def test_local_send_time_is_refused_unless_exactly_hh_mm(stubs, server):
    push = stubs.push_pb2_grpc.PushServiceStub(grpc.insecure_channel(server.address))
    for text in ["24:00", "7:05", "07:5", "07:05:00", "23:60", "0705", " 07:05", "٠٧:٠٥", "０７:０５", "1" * 10_000]:
        with pytest.raises(grpc.RpcError) as info:
            push.Schedule(request(stubs, "k-bad", local_send_time=text), timeout=10)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, text
        assert "local_send_time" in info.value.details(), info.value.details()
        assert len(info.value.details()) < 1_000  # the input is quoted truncated
    with pytest.raises(grpc.RpcError) as info:
        push.Schedule(request(stubs, "k-nul", local_send_time="07:\x0005"), timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "local_send_time" in info.value.details()


def move_campaign_count(db, message_id, policy_from, policy_to):
    """The message's campaign_funnel count from one policy value to another
    (schema v14's key: the message's campaign columns, funnel, policy)."""
    key = "bundle_id, campaign_id, delivery_method, ab_test, funnel"
    db.execute(f"UPDATE campaign_funnel SET n = n - 1 WHERE ({key}, policy) = (SELECT {key}, ? FROM messages WHERE id = ?)",
               (policy_from, message_id))
    db.execute(f"INSERT INTO campaign_funnel({key}, policy, n) SELECT {key}, ?, 1 FROM messages WHERE id = ? "
               "ON CONFLICT DO UPDATE SET n = n + 1", (policy_to, message_id))


def test_the_policy_values_read_back_through_get_list_report_and_status(stubs, server):
    t, r, p = stubs.types_pb2, stubs.read_pb2, stubs.push_pb2
    channel = grpc.insecure_channel(server.address)
    push = stubs.push_pb2_grpc.PushServiceStub(channel)
    held = push.Schedule(request(stubs, "k-held", local_send_time="07:05", transactional=True), timeout=10)
    withheld = push.Schedule(request(stubs, "k-withheld"), timeout=10)
    assert held.state == t.MESSAGE_STATE_SCHEDULED
    channel.close()
    assert server.stop() == 0

    # What the store's hold and suppression write (schema v9), by hand.
    now = int(time.time() * 1000)
    not_before = now + 9 * 3_600_000
    db = sqlite3.connect(os.path.join(server.data_dir, "herald.sqlite"))
    assert db.execute("PRAGMA user_version").fetchone()[0] >= 9
    # Schedule's new fields are in the stored request: the dispatcher reads them at claim time.
    stored = p.ScheduleRequest.FromString(db.execute("SELECT request FROM messages WHERE id = ?", (held.message_id,)).fetchone()[0])
    assert (stored.local_send_time, stored.transactional) == ("07:05", True)
    rows = [
        (held.message_id, TOKEN_A, "waiting", "quiet_hours", now, not_before),
        (held.message_id, TOKEN_B, "suppressed", "local_time", now, None),
        (withheld.message_id, TOKEN_C, "suppressed", "frequency_cap", now, None),
    ]
    db.executemany("INSERT INTO outcomes(message_id, device_token, status, reason, at, not_before) VALUES (?, ?, ?, ?, ?, ?)", rows)
    # Since schema v17 the store's writer, not a trigger, keeps the counts a
    # row change moves (MessageChanges): by hand, they move by hand.
    move_campaign_count(db, held.message_id, 0, 1)
    db.execute("UPDATE messages SET deferred_at = ? WHERE id = ?", (now, held.message_id))
    move_campaign_count(db, withheld.message_id, 0, 2)
    db.execute("UPDATE messages SET state = 'suppressed', last_error = 'withheld by the delivery policy', updated_at = ? WHERE id = ?",
               (now, withheld.message_id))
    db.execute("UPDATE state_counts SET n = n - 1 WHERE state = 'scheduled'")
    db.execute("INSERT INTO state_counts(state, n) VALUES ('suppressed', 1) ON CONFLICT(state) DO UPDATE SET n = n + 1")
    db.commit()
    db.close()

    again = start_herald("--grace-seconds", "0", data_dir=server.data_dir)
    try:
        channel = grpc.insecure_channel(again.address)
        push = stubs.push_pb2_grpc.PushServiceStub(channel)
        got = push.GetMessage(r.GetMessageRequest(bundle_id=BUNDLE, message_id=held.message_id), timeout=10)
        assert got.message.state == t.MESSAGE_STATE_SCHEDULED
        devices = {d.device_token: d for d in got.devices}
        waiting, suppressed = devices[TOKEN_A], devices[TOKEN_B]
        assert r.DeviceOutcome.Name(waiting.outcome) == "DEVICE_OUTCOME_WAITING" and waiting.reason == "quiet_hours"
        assert dt.datetime.fromisoformat(waiting.not_before.replace("Z", "+00:00")).timestamp() * 1000 == pytest.approx(not_before, abs=1)
        assert r.DeviceOutcome.Name(suppressed.outcome) == "DEVICE_OUTCOME_SUPPRESSED" and suppressed.reason == "local_time"
        assert suppressed.not_before == ""
        events = [r.TimelineEvent.Name(e.event) for e in got.timeline]
        assert events == ["TIMELINE_EVENT_SCHEDULED", "TIMELINE_EVENT_DEFERRED", "TIMELINE_EVENT_SUPPRESSED"], got.timeline
        assert got.timeline[1].reason.startswith("quiet_hours until ")

        gone = push.GetMessage(r.GetMessageRequest(bundle_id=BUNDLE, idempotency_key="k-withheld"), timeout=10)
        assert t.MessageState.Name(gone.message.state) == "MESSAGE_STATE_SUPPRESSED"
        assert [r.TimelineEvent.Name(e.event) for e in gone.timeline][-1] == "TIMELINE_EVENT_SUPPRESSED"

        listed = push.ListMessages(r.ListMessagesRequest(bundle_id=BUNDLE, user_id="u1", states=[t.MESSAGE_STATE_SUPPRESSED]),
                                   timeout=10)
        assert [m.message_id for m in listed.messages] == [withheld.message_id]

        report = push.CampaignReport(r.CampaignReportRequest(bundle_id=BUNDLE, campaign_id="camp"), timeout=10)
        assert [(c.scheduled, c.deferred, c.suppressed) for c in report.cohorts] == [(2, 1, 1)]

        deadline = time.monotonic() + 10
        while True:
            status = push.Status(p.StatusRequest(), timeout=10)
            counts = {t.MessageState.Name(c.state): c.count for c in status.messages}
            if counts.get("MESSAGE_STATE_SUPPRESSED") == 1:
                break
            assert time.monotonic() < deadline, counts
            time.sleep(0.05)
        assert list(status.delivery_policies) == []  # filled by the lead's policy configuration
        channel.close()
    finally:
        assert again.stop() == 0
