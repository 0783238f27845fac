"""Several `herald serve` replicas on one PostgreSQL database (issue 13):
due messages are polled and claimed from the database, so a message
scheduled through one replica is delivered by another; a replica killed
with -9 mid-dispatch loses nothing acknowledged and resends nothing
(its claims are resolved by SPEC §4's crash rule: at its restart under the
same `--replica-id`, or by another replica once its lease expired); Cancel
works through any replica; one idempotency key sent to two replicas at
once leaves one message.

Needs `HERALD_TEST_POSTGRES_URL` (see test_postgres.py, whose fixture gives
each test a fresh database). Hostile cases first; every wait is for a
condition, bounded by a deadline."""
from __future__ import annotations

import datetime as dt
import json
import os
import signal
import threading
import time

import grpc

from conftest import herald_binary, start_herald
from test_postgres import PostgresCrashRun, database, psql  # noqa: F401 (the fixture)
from test_store_ops import BUNDLE, Api, later

LEASE_SECONDS = 6


def wait_for(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)
    return value


class ReplicaRun(PostgresCrashRun):
    """test_crash_delivery.py's run with several replicas on one database,
    each with its own data directory and `--replica-id`, all delivering to
    one `herald apns-sim` (its record is the ground truth)."""

    def __init__(self, url, *args, **kwargs):
        super().__init__(url, *args, **kwargs)
        self.procs: dict[str, object] = {}

    def start_replica(self, name):
        self.data = f"{self.workdir}/data-{name}"
        self.store_args = ["--store", self.url, "--replica-id", name, "--lease-seconds", str(LEASE_SECONDS),
                           "--route-in-flight", "4"]
        os.makedirs(self.data, exist_ok=True)
        proc, address = self.start_herald()
        self.procs[name] = proc
        return address

    def kill(self, name):
        proc = self.procs.pop(name)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        self.kills += 1

    def note_interrupted(self, owner=None):
        """CrashRun's note in one query (a psql call per message would delay the restart)."""
        self.never_handed_over |= set(map(tuple, self.rows("""
            SELECT m.idempotency_key, d.device_token FROM messages m
            JOIN devices d ON d.bundle_id = m.bundle_id AND d.user_id = m.user_id
            WHERE m.sending_since IS NOT NULL AND m.owner = ?
              AND NOT EXISTS (SELECT 1 FROM handovers h WHERE h.message_id = m.id AND h.push = m.push_started_at
                              AND h.device_token = d.device_token)
              AND NOT EXISTS (SELECT 1 FROM outcomes o WHERE o.message_id = m.id AND o.at >= m.push_started_at
                              AND o.device_token = d.device_token)""", owner)))

    def claims(self, owner, before_ms=None):
        sql = "SELECT count(*) FROM messages WHERE sending_since IS NOT NULL AND owner = ?"
        if before_ms is None:
            return int(self.rows(sql, owner)[0][0])
        return int(self.rows(sql + " AND sending_since <= ?", owner, before_ms)[0][0])

    def stop_all(self):
        for name in list(self.procs):
            proc = self.procs[name]
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == 0, name  # on a timeout the test's finally kills it
            del self.procs[name]


def test_three_replicas_kill_9_of_one_while_it_dispatches_then_restart(stubs, tmp_path, database):
    run = ReplicaRun(database, herald_binary(), stubs, str(tmp_path), users=30, per_user=40, devices=2, delay_ms=200)
    try:
        run.start_simulator()
        addresses = [run.start_replica(name) for name in ("r0", "r1", "r2")]
        run.schedule_all(addresses, lead_seconds=2)

        # 1. r1 is killed while it holds claims, and restarted at once under
        # its id: its start resolves its own claims, before any lease expired.
        wait_for(lambda: run.record_count() >= 40 and run.claims("r1") > 0, 120, "r1 to dispatch")
        print("r1 killed with", run.claims("r1"), "claims;", run.record_count(), "delivered")
        run.kill("r1")
        killed_at = int(time.time() * 1000)
        run.note_interrupted(owner="r1")
        addresses[1] = run.start_replica("r1")
        restarted_in = int(time.time() * 1000) - killed_at
        print("r1 restarted in", restarted_in, "ms; its claims from before the kill:", run.claims("r1", before_ms=killed_at))
        if restarted_in < LEASE_SECONDS * 1000 - 500:
            assert run.claims("r1", before_ms=killed_at) == 0, "the restart left its own claims"

        # 2. r2 is killed while it holds claims and stays down: r0 and r1
        # take its claims over once their lease expired.
        wait_for(lambda: run.claims("r2") > 0, 120, "r2 to dispatch")
        print("r2 killed with", run.claims("r2"), "claims;", run.record_count(), "delivered")
        run.kill("r2")
        run.note_interrupted(owner="r2")
        taken = time.monotonic()
        wait_for(lambda: run.claims("r2") == 0, LEASE_SECONDS + 30, "r2's claims to be taken over")
        # Not before the lease ended (a takeover without the lease would come within its third).
        assert time.monotonic() - taken > LEASE_SECONDS / 2, "a dead replica's claims were taken before its lease ended"
        run.start_replica("r2")

        wait_for(lambda: run.waiting() == 0, 300, "every message delivered")
        run.stop_all()
        run.sim.terminate()
        assert run.sim.wait(timeout=120) == 0
        figures = run.figures()
    finally:
        for proc in run.procs.values():
            proc.kill()
            proc.wait()
        run.stop()
    print(figures)
    assert figures["kills"] == 2, figures
    assert figures["duplicates"] == 0, figures
    assert figures["lost"] == 0, figures
    assert figures["delivered_but_failed"] == 0 and figures["failed"] == 0, figures
    assert (figures["never_handed_over_then_delivered"] + figures["never_handed_over_then_unconfirmed"]
            == figures["never_handed_over"]), figures
    assert figures["sent"] == figures["messages"], figures
    # Every claim ended (no owner left), every message SENT.
    owners = {row[0] for row in run.rows("SELECT DISTINCT owner FROM messages WHERE owner IS NOT NULL")}
    assert owners == set(), owners
    counts = dict(run.rows("SELECT state, count(*) FROM messages GROUP BY state"))
    assert counts == {"sent": str(figures["messages"])}, counts


def records(*paths):
    lines = []
    for path in paths:
        if path.exists():
            lines += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return lines


def test_one_key_sent_to_two_replicas_at_once_leaves_one_message(stubs, tmp_path, database):
    paths = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    servers = [start_herald("--store", database, "--replica-id", name, "--grace-seconds", "0", "--sim-record", str(path),
                            data_dir=str(tmp_path / f"data-{name}"))
               for name, path in zip(("a", "b"), paths)]
    try:
        apis = [Api(stubs, server.address) for server in servers]
        assert apis[0].register("u-key", "cd" * 32).created
        keys = [f"both-{i}" for i in range(20)]
        results: dict[tuple[str, int], object] = {}
        start = threading.Barrier(2)

        def send(index):
            start.wait(timeout=30)
            for key in keys:
                try:
                    results[(key, index)] = apis[index].schedule("u-key", key)
                except grpc.RpcError as error:
                    results[(key, index)] = error.code()

        threads = [threading.Thread(target=send, args=(i,)) for i in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert len(results) == 40
        for key in keys:
            outcomes = [results[(key, 0)], results[(key, 1)]]
            # Each call either stored a message or was refused ALREADY_EXISTS (the first was already being sent).
            assert all(not isinstance(o, grpc.StatusCode) or o == grpc.StatusCode.ALREADY_EXISTS for o in outcomes), outcomes
        t = apis[0].t

        def settled():
            states = [m.state for m in apis[1].list_all("u-key")]
            return all(s not in (t.MessageState.Value("MESSAGE_STATE_SCHEDULED"),) for s in states) and states

        wait_for(settled, 60, "every message to settle")
        messages = apis[1].list_all("u-key")
        per_key: dict[str, list[int]] = {}
        for message in messages:
            per_key.setdefault(message.idempotency_key, []).append(message.state)
        sent = t.MessageState.Value("MESSAGE_STATE_SENT")
        superseded = t.MessageState.Value("MESSAGE_STATE_SUPERSEDED")
        for key in keys:
            states = per_key[key]
            assert states.count(sent) == 1 and all(s in (sent, superseded) for s in states), (key, states)
        for api in apis:
            api.channel.close()
    finally:
        for server in servers:
            assert server.stop() == 0
    delivered = [d["payload"].get("ctx_idempotency_key") for d in records(*paths)]
    assert sorted(delivered) == sorted(keys), delivered  # one delivery per key, across both replicas


def test_scheduled_through_a_delivered_when_only_b_runs_and_cancel_through_b(stubs, tmp_path, database):
    record_a, record_b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a = start_herald("--store", database, "--replica-id", "a", "--grace-seconds", "0", "--sim-record", str(record_a),
                     data_dir=str(tmp_path / "data-a"))
    b = start_herald("--store", database, "--replica-id", "b", "--grace-seconds", "0", "--sim-record", str(record_b),
                     data_dir=str(tmp_path / "data-b"))
    try:
        api_a, api_b = Api(stubs, a.address), Api(stubs, b.address)
        t, p = api_a.t, api_a.p
        assert api_a.register("u-ab", "ef" * 32).created
        # Cancel through B of a message scheduled through A.
        far = api_a.schedule("u-ab", "k-far", after=later())
        cancelled = api_b.push.Cancel(p.CancelRequest(
            bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id="u-ab", campaign_id="camp", idempotency_key="k-far"),
            timeout=10)
        assert cancelled.cancelled
        assert api_a.get(far.message_id).message.state == t.MessageState.Value("MESSAGE_STATE_CANCELLED")
        # Due in 3 s, scheduled through A; A then dies (kill -9) before it is due.
        due = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=3)
        soon = api_a.schedule("u-ab", "k-soon", after=due.isoformat())
        api_a.channel.close()
        a.proc.send_signal(signal.SIGKILL)
        a.proc.wait()
        api_b.wait_state(soon.message_id, "MESSAGE_STATE_SENT", timeout=30)
        # On time: the poll runs every 250 ms at most (a second more of slack for the loaded machine).
        [[late_ms]] = psql(database, "SELECT sent_at - due_at FROM messages WHERE id = ?", soon.message_id)
        assert 0 <= int(late_ms) < 1250, late_ms
        api_b.channel.close()
    finally:
        if a.proc.poll() is None:
            a.stop()
        assert b.stop() == 0
    assert not records(record_a)
    delivered = [d["payload"].get("ctx_idempotency_key") for d in records(record_b)]
    assert delivered == ["k-soon"], delivered
