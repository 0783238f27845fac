"""The delivery policy's crash rule on PostgreSQL (issue 26: "kill -9 while
messages are held loses none and counts none twice"), through the real
binary, stock grpcio and each replica's bundled APNs simulator.

Two replicas share one database and one policy (quiet hours and `cap=1/…`).
Through replica A: one message held by quiet hours (WAITING `quiet_hours`),
one sent at once and a second to the same user held by the cap (WAITING
`frequency_cap` until the first's period ends). A is killed with -9 while
both are held; B alone takes the cap-held message over and sends it when
its hold ends, not before; A restarts under the same `--replica-id`; the
quiet-held message goes when the quiet period ends. Every message reaches
the simulators exactly once (the union of both records), and the ledger
holds one counted send per message, at the instant it was first counted.

The second test is hostile to the ledger: routes that take one push at a
time defer most reserved pushes, and the caps must stay exact across the
replicas. It found a race (fixed): a deferred push's claim was given back
before its reservation, so the other replica could send the message and
then lose its count to the late release.

Time is real: quiet hours end at the next minute boundary at least 20 s
away and the cap's period ends a few seconds before that, so the test waits
at most about 80 s; every wait polls a condition with a deadline.

Needs `HERALD_TEST_POSTGRES_URL` (see test_postgres.py)."""
from __future__ import annotations

import datetime as dt
import math
import os
import signal
import time

import pytest

from conftest import start_herald
from test_delivery import Record, with_key
from test_delivery_policy import BUNDLE, TOKEN_A, TOKEN_B, Policy, rfc3339, user, utc_now
from test_postgres import database, psql  # noqa: F401 (the fixture)

#: Setting-up takes a few seconds (two replicas, a sent message, two holds): the quiet period ends after that.
SETUP_SECONDS = 20
#: The cap-held message's hold ends about this long before the quiet period does (room for B's send and A's restart);
#: on a slow machine it may end after it, and the quiet-held message then goes first, by B: the checks hold either way.
CAP_BEFORE_QUIET_SECONDS = 8


def quiet_until_next_minute(at_least):
    """A UTC quiet period `HH:MM-HH:MM` holding now and ending at the first
    minute boundary at least `at_least` seconds away; its end."""
    now = utc_now()
    end = (now + dt.timedelta(seconds=at_least + 60, microseconds=-1)).replace(second=0, microsecond=0)  # ceiling
    assert at_least <= (end - now).total_seconds() < at_least + 60
    return f"{end - dt.timedelta(hours=2):%H:%M}-{end:%H:%M}", end


def counted_sends(url, user_id):
    """The ledger's rows for `user_id`: {message id: instant (ms)}."""
    rows = psql(url, "SELECT message_id, at FROM counted_sends WHERE bundle_id = ? AND user_id = ?", BUNDLE, user_id)
    return {message: int(at) for message, at in rows}


def delivered(records, key):
    return [d for record in records for d in record.lines() if with_key(key)(d)]


def test_kill_9_while_messages_are_held_loses_none_and_counts_none_twice(stubs, tmp_path, database):
    quiet, end = quiet_until_next_minute(SETUP_SECONDS)
    # cap=1/P: the second message's hold ends P after the first was counted, a little before the quiet period's end.
    period = max(5, math.floor((end - utc_now()).total_seconds()) - CAP_BEFORE_QUIET_SECONDS)
    spec = f"bundles={BUNDLE} quiet-hours={quiet} cap=1/{period}s"
    records = {name: Record(str(tmp_path / f"apns-{name}.jsonl")) for name in ("a", "b")}

    def replica(name):
        return start_herald("--store", database, "--replica-id", name, "--grace-seconds", "0",
                            "--sim-record", records[name].path, "--delivery-policy", spec,
                            data_dir=str(tmp_path / f"data-{name}"))

    servers = {name: replica(name) for name in ("a", "b")}
    apis = {name: Policy(stubs, server) for name, server in servers.items()}
    try:
        a, b = apis["a"], apis["b"]
        waiting = a.outcome("DEVICE_OUTCOME_WAITING")
        sleeper, capped = user(), user()
        a.register(sleeper, TOKEN_A, "UTC")  # inside the quiet period now
        a.register(capped, TOKEN_B, "Asia/Tokyo")  # 9 h ahead: outside it for the whole test

        # Held by quiet hours until their end.
        assert rfc3339(a.schedule(sleeper, "k-quiet").send_at) == end
        quiet_held = a.wait("k-quiet", lambda m: m.devices and m.devices[0].outcome == waiting)
        assert (quiet_held.devices[0].reason, rfc3339(quiet_held.devices[0].not_before)) == ("quiet_hours", end)

        # The first message to `capped` goes at once and is counted; the second waits for the cap.
        a.schedule(capped, "k-cap-1")
        first = a.wait("k-cap-1", lambda m: a.state_name(m) == "MESSAGE_STATE_SENT")
        a.schedule(capped, "k-cap-2")
        cap_held = a.wait("k-cap-2", lambda m: m.devices and m.devices[0].outcome == waiting)
        assert cap_held.devices[0].reason == "frequency_cap"
        not_before = rfc3339(cap_held.devices[0].not_before)
        ledger = counted_sends(database, capped)
        assert list(ledger) == [first.message.message_id], ledger
        # The hold ends one period after the first was counted (its counted instant, just before its push).
        assert not_before == dt.datetime.fromtimestamp((ledger[first.message.message_id] + period * 1000) / 1000,
                                                       dt.timezone.utc)
        sent_at = rfc3339(first.devices[0].at)
        assert dt.timedelta(0) <= sent_at - (not_before - dt.timedelta(seconds=period)) < dt.timedelta(seconds=5)

        # kill -9 of A while both are held (neither hold has ended yet).
        assert utc_now() < not_before, "setting up took longer than the cap's period: raise SETUP_SECONDS"
        os.kill(servers["a"].proc.pid, signal.SIGKILL)
        servers["a"].proc.wait()
        a.close()
        del apis["a"], servers["a"]

        # B shows both still held, as A left them: the cap's count was not lost nor doubled.
        for key, reason, until in (("k-quiet", "quiet_hours", end), ("k-cap-2", "frequency_cap", not_before)):
            device = b.message(key).devices[0]
            assert (device.outcome, device.reason, rfc3339(device.not_before)) == (waiting, reason, until), key

        # B alone sends the cap-held message when its hold ends, not before.
        sent = records["b"].wait_for(with_key("k-cap-2"), timeout=(not_before - utc_now()).total_seconds() + 30)
        assert len(sent) == 1
        second = b.wait("k-cap-2", lambda m: b.state_name(m) == "MESSAGE_STATE_SENT")
        assert [d.outcome for d in second.devices] == [b.outcome("DEVICE_OUTCOME_SENT")]
        assert rfc3339(second.devices[0].at) >= not_before
        # The ledger: k-cap-2 counted once, at its send; k-cap-1 at its first instant, unless retention has
        # pruned it already (a row older than the longest cap period is dropped).
        counted = counted_sends(database, capped)
        assert counted.get(first.message.message_id, ledger[first.message.message_id]) == ledger[first.message.message_id]
        assert set(counted) - {first.message.message_id} == {second.message.message_id}, counted
        assert counted[second.message.message_id] >= not_before.timestamp() * 1000

        # A restarts under its id; the quiet-held message goes at the quiet period's end, by either replica.
        servers["a"] = replica("a")
        apis["a"] = a = Policy(stubs, servers["a"])
        deadline = time.monotonic() + (end - utc_now()).total_seconds() + 30
        while not delivered(records.values(), "k-quiet"):
            assert time.monotonic() < deadline, "the quiet-held message was never sent"
            time.sleep(0.02)
        final = a.wait("k-quiet", lambda m: a.state_name(m) == "MESSAGE_STATE_SENT")
        assert [d.outcome for d in final.devices] == [a.outcome("DEVICE_OUTCOME_SENT")]
        assert rfc3339(final.devices[0].at) >= end

        # Exactly once each at the simulators, one counted send per message at its first instant.
        for key in ("k-quiet", "k-cap-1", "k-cap-2"):
            assert len(delivered(records.values(), key)) == 1, key
        assert len([d for r in records.values() for d in r.lines()]) == 3
        assert list(counted_sends(database, sleeper)) == [final.message.message_id]

        # Nothing more goes out, up to both replicas' graceful stop (which drains every push in flight).
        for name in ("a", "b"):
            apis.pop(name).close()
            assert servers.pop(name).stop() == 0, name
        assert len([d for r in records.values() for d in r.lines()]) == 3
    finally:
        for api in apis.values():
            api.close()
        for server in servers.values():
            assert server.stop() == 0


def test_caps_stay_exact_on_two_replicas_when_saturated_routes_defer_reserved_pushes(stubs, tmp_path, database):
    # Hostile: each replica's APNs route takes one push at a time and queues none, so most claimed
    # pushes are deferred (claim given back) after the policy reserved their counted send. A
    # deferred push's reservation must not be given back once the other replica may have taken the
    # message over: it would send it uncounted, and the user's next message would pass the cap.
    spec = f"bundles={BUNDLE} cap=3/2h"
    records = {name: Record(str(tmp_path / f"apns-{name}.jsonl")) for name in ("a", "b")}
    servers = {name: start_herald("--store", database, "--replica-id", name, "--grace-seconds", "0",
                                  "--sim-record", records[name].path, "--delivery-policy", spec,
                                  "--route-in-flight", "1", "--route-queue", "0", data_dir=str(tmp_path / f"data-{name}"))
               for name in ("a", "b")}
    apis = {name: Policy(stubs, server) for name, server in servers.items()}
    try:
        a = apis["a"]
        t, p = stubs.types_pb2, stubs.push_pb2
        users = [user() for _ in range(40)]
        for index, u in enumerate(users):
            a.register(u, f"{index:04x}" * 16, "UTC")
        # Six messages per user, all due at one instant; a 1-hour window: a fourth send never fits.
        due = utc_now() + dt.timedelta(seconds=3)
        futures = []
        for index, u in enumerate(users):
            for i in range(6):
                request = p.ScheduleRequest(
                    bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=u, campaign_id="daily", idempotency_key=f"k-{index}-{i}",
                    delivery_method=t.DELIVERY_METHOD_TRADITIONAL, deliver_after=due.isoformat(), deliver_within_hours=1,
                    content=t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="Body")))
                futures.append(apis["ab"[(index + i) % 2]].push.Schedule.future(request, timeout=30))
        for future in futures:
            future.result()
        assert utc_now() < due, "scheduling ran past the due time: the pushes did not come at once"

        def finished():
            counts = {a.stubs.types_pb2.MessageState.Name(c.state): c.count
                      for c in a.push.Status(p.StatusRequest(), timeout=10).messages}
            return counts.get("MESSAGE_STATE_SENT", 0) + counts.get("MESSAGE_STATE_SUPPRESSED", 0) == len(futures)

        def wait_all_ended():
            deadline = time.monotonic() + 120
            while not finished():
                assert time.monotonic() < deadline, "the pushes did not all end"
                time.sleep(0.1)

        wait_all_ended()
        uncounted = psql(database, "SELECT count(*) FROM messages m WHERE m.state = 'sent' AND NOT EXISTS "
                                   "(SELECT 1 FROM counted_sends c WHERE c.bundle_id = m.bundle_id AND c.message_id = m.id)")
        # One more message per user, now: every user has 3 counted sends inside 2 h, so each is SUPPRESSED.
        for index, u in enumerate(users):
            futures.append(apis["ab"[index % 2]].push.Schedule.future(p.ScheduleRequest(
                bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=u, campaign_id="daily", idempotency_key=f"k-{index}-late",
                delivery_method=t.DELIVERY_METHOD_TRADITIONAL, deliver_within_hours=1,
                content=t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="Body"))), timeout=30))
        for future in futures:
            future.result()
        wait_all_ended()
        tokens = [d["device_token"] for r in records.values() for d in r.lines()]
        sends = {u: tokens.count(f"{index:04x}" * 16) for index, u in enumerate(users)}
        assert ({u: n for u, n in sends.items() if n != 3}, uncounted) == ({}, [["0"]]), \
            "users sent other than 3 times (cap=3/2h); messages sent but not counted"
    finally:
        for api in apis.values():
            api.close()
        for server in servers.values():
            assert server.stop() == 0
