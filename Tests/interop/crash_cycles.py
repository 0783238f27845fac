"""kill -9 during delivery, several times, then SPEC §4's crash rule checked
against what APNs really received.

The APNs simulator runs as its own process (`herald apns-sim --record`), so
it survives every kill and its record is the ground truth of what was
delivered. Herald delivers to it through a configured token route. Each
cycle starts `herald serve` on the same data directory, waits for the record
to grow by a step (delivery is under way, with pushes in flight: the
simulator delays every answer), and kills it with SIGKILL; before the restart
the database is read to note the devices of messages caught mid-push that
were never handed over. A last run delivers the rest and is stopped with
SIGTERM. Used by Tests/interop/test_crash_delivery.py (a few kills) and
bench/crash.sh (24 kills)."""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
import sqlite3
import subprocess
import threading
import time
from collections import Counter

import grpc
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

BUNDLE = "com.example.crash"
KEY_ID = "CRASHKEY01"
TEAM_ID = "CRASHTEAM1"
LISTENING = re.compile(r"listening on (\S+):(\d+)")


def _read_listening(proc, what):
    line = proc.stdout.readline()
    match = LISTENING.search(line or "")
    if not match:
        proc.kill()
        raise AssertionError(f"{what} did not report its port: {line!r}")
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
    return f"{match.group(1)}:{match.group(2)}", int(match.group(2))


def token(user: int, device: int, platform: str = "ios") -> str:
    if platform == "android":  # an FCM registration token's shape
        return f"fcm{user:08x}:{device:08x}_" + "APA91b-x" * 8
    return f"{user:08x}{device:08x}" * 4


class CrashRun:
    def __init__(self, binary, stubs, workdir, *, users, per_user, devices, delay_ms=20, platform="ios"):
        """`platform` "android" delivers through FCM to `herald fcm-sim` instead."""
        self.binary, self.stubs, self.workdir = binary, stubs, workdir
        self.platform = platform
        self.users, self.per_user, self.devices, self.delay_ms = users, per_user, devices, delay_ms
        self.data = os.path.join(workdir, "data")
        self.db = os.path.join(self.data, "herald.sqlite")
        self.record = os.path.join(workdir, "apns-sim.jsonl")
        self.sim = None
        self.never_handed_over: set[tuple[str, str]] = set()
        self.kills = 0

    # -- processes ---------------------------------------------------------

    def start_simulator(self):
        if self.platform == "android":
            return self.start_fcm_simulator()
        key = ec.generate_private_key(ec.SECP256R1())
        self.p8 = os.path.join(self.workdir, f"AuthKey_{KEY_ID}.p8")
        with open(self.p8, "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
        os.chmod(self.p8, 0o600)  # Herald refuses a key group or others may read
        public = os.path.join(self.workdir, "public.pem")
        with open(public, "wb") as f:
            f.write(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                  serialization.PublicFormat.SubjectPublicKeyInfo))
        self.ca = os.path.join(self.workdir, "sim-ca.pem")
        self.sim = subprocess.Popen(
            [self.binary, "apns-sim", "--port", "0", "--ca-out", self.ca, "--key-id", KEY_ID, "--team-id", TEAM_ID,
             "--public-key", public, "--topics", BUNDLE, "--quiet", "--record", self.record,
             "--delay-ms", str(self.delay_ms)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        _, self.sim_port = _read_listening(self.sim, "apns-sim")

    def start_fcm_simulator(self):
        from cryptography.hazmat.primitives.asymmetric import rsa

        from conftest import write_service_account

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public = os.path.join(self.workdir, "public.pem")
        with open(public, "wb") as f:
            f.write(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                  serialization.PublicFormat.SubjectPublicKeyInfo))
        self.ca = os.path.join(self.workdir, "fcm-ca.pem")
        self.sim = subprocess.Popen(
            [self.binary, "fcm-sim", "--port", "0", "--ca-out", self.ca, "--record", self.record,
             "--account", f"project=crash-proj email=herald@crash-proj.iam.gserviceaccount.com kid=kid-crash-proj public-key={public}",
             "--fault", f"slow={self.delay_ms}:1000000"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        _, self.sim_port = _read_listening(self.sim, "fcm-sim")
        self.account, _ = write_service_account(self.workdir, "crash-proj", key=key,
                                                token_uri=f"https://127.0.0.1:{self.sim_port}/token")
    #: Extra `herald serve` flags (the PostgreSQL run gives `--store`).
    store_args: list[str] = []

    def rows(self, sql, *params):
        """The rows of a query (`?` placeholders) on the store, read beside
        the running server (a WAL reader here; test_postgres.py overrides it)."""
        db = sqlite3.connect(self.db)
        try:
            return db.execute(sql, params).fetchall()
        finally:
            db.close()

    def start_herald(self):
        if self.platform == "android":
            route = ["--fcm-route", f"project=crash-proj key={self.account} bundles={BUNDLE} "
                                    f"endpoint=127.0.0.1:{self.sim_port} ca={self.ca}"]
        else:
            route = ["--apns-route", f"team={TEAM_ID} key-id={KEY_ID} key={self.p8} bundles={BUNDLE} env=sandbox "
                                     f"endpoint=127.0.0.1:{self.sim_port} ca={self.ca}"]
        log = open(os.path.join(self.workdir, "herald.log"), "a")
        proc = subprocess.Popen(
            [self.binary, "serve", "--port", "0", "--data-dir", self.data, "--grace-seconds", "0",
             "--durability", "process", "--log-level", "warning", *route, *self.store_args],
            stdout=subprocess.PIPE, stderr=log, text=True)
        address, _ = _read_listening(proc, "herald serve")
        return proc, address

    def stop(self):
        if self.sim and self.sim.poll() is None:
            self.sim.terminate()
            self.sim.wait(timeout=30)

    # -- workload ----------------------------------------------------------

    @property
    def messages(self):
        return self.users * self.per_user

    @property
    def pushes(self):
        return self.messages * self.devices

    def schedule_all(self, address, lead_seconds):
        """Registers the devices and schedules every message through
        `address`, or round-robin through a list of addresses (replicas)."""
        t, d, p = self.stubs.types_pb2, self.stubs.device_pb2, self.stubs.push_pb2
        platform = t.PLATFORM_ANDROID if self.platform == "android" else t.PLATFORM_IOS
        environment = t.APNS_ENVIRONMENT_UNSPECIFIED if self.platform == "android" else t.APNS_ENVIRONMENT_SANDBOX
        after = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=lead_seconds)).isoformat()
        addresses = [address] if isinstance(address, str) else list(address)
        channels = [grpc.insecure_channel(a) for a in addresses]
        try:
            devices = self.stubs.device_pb2_grpc.DeviceServiceStub(channels[0])
            pushes = [self.stubs.push_pb2_grpc.PushServiceStub(c) for c in channels]
            for u in range(self.users):
                for k in range(self.devices):
                    devices.RegisterDevice(d.RegisterDeviceRequest(
                        bundle_id=BUNDLE, platform=platform, user_id=f"user-{u}", device_token=token(u, k, self.platform),
                        locale="en", environment=environment), timeout=30)
            futures = []
            for u in range(self.users):
                for i in range(self.per_user):
                    push = pushes[(u * self.per_user + i) % len(pushes)]
                    futures.append(push.Schedule.future(p.ScheduleRequest(
                        bundle_id=BUNDLE, platform=platform, user_id=f"user-{u}", campaign_id="crash",
                        idempotency_key=f"crash-{u}-{i}", delivery_method=t.DELIVERY_METHOD_TRADITIONAL,
                        deliver_after=after, deliver_within_hours=1,
                        content=t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="Crash"))),
                        timeout=60))
                    if len(futures) >= 256:
                        for f in futures:
                            f.result()
                        futures = []
            for f in futures:
                f.result()
        finally:
            for c in channels:
                c.close()

    def record_lines(self):
        if not os.path.exists(self.record):
            return []
        with open(self.record) as f:
            return [json.loads(line) for line in f if line.endswith("\n") and line.strip()]

    def record_count(self):
        if not os.path.exists(self.record):
            return 0
        with open(self.record, "rb") as f:
            return sum(1 for _ in f)

    def note_interrupted(self, owner=None):
        """After a kill, before the restart: devices of messages caught
        mid-push with neither a hand-over mark nor an outcome for that push
        (of the killed replica, `owner`, when replicas share the database)."""
        query = """
            SELECT m.id, m.idempotency_key, m.user_id, m.push_started_at FROM messages m
            WHERE m.sending_since IS NOT NULL"""
        rows = self.rows(query + " AND m.owner = ?", owner) if owner else self.rows(query)
        for message_id, key, user, push in rows:
            tokens = {r[0] for r in self.rows(
                "SELECT device_token FROM devices WHERE bundle_id = ? AND user_id = ?", BUNDLE, user)}
            handed = {r[0] for r in self.rows(
                "SELECT device_token FROM handovers WHERE message_id = ? AND push = ?", message_id, push)}
            answered = {r[0] for r in self.rows(
                "SELECT device_token FROM outcomes WHERE message_id = ? AND at >= ?", message_id, push)}
            self.never_handed_over |= {(key, t) for t in tokens - handed - answered}

    def waiting(self):
        """Messages still waiting for a push, read from the database (a WAL
        reader beside the running server; Status is refreshed in the background)."""
        return int(self.rows("SELECT count(*) FROM messages WHERE state IN ('scheduled', 'handed_off')")[0][0])

    def wait_for_growth(self, start, step, timeout):
        """True once the record grew by `step` (kill now); False when nothing
        is left to deliver."""
        deadline = time.monotonic() + timeout
        polls = 0
        while self.record_count() < start + step:
            polls += 1
            if polls % 50 == 0:
                waiting = self.waiting()
                if waiting == 0:
                    return False
                assert time.monotonic() < deadline, f"delivery stalled: {waiting} waiting"
            time.sleep(0.002)
        return True

    def run(self, kills, timeout=300):
        os.makedirs(self.data, exist_ok=True)
        self.start_simulator()
        # Small steps: each restart delivers a burst before the next kill lands.
        step = max(1, self.pushes // (kills * 4))
        proc, address = self.start_herald()
        self.schedule_all(address, lead_seconds=2 + self.messages / 2000)
        for cycle in range(kills):
            if cycle > 0:
                proc, address = self.start_herald()
            if not self.wait_for_growth(self.record_count(), step, timeout):
                break  # all delivered: this run ends the cycles
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            self.kills += 1
            self.note_interrupted()
        else:
            proc, address = self.start_herald()
        deadline = time.monotonic() + timeout
        while (waiting := self.waiting()) > 0:
            assert time.monotonic() < deadline, f"{waiting} messages still waiting"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        # The simulator writes its record behind the deliveries: stop it
        # (SIGTERM), and it exits once every accepted push is in the file.
        self.sim.terminate()
        assert self.sim.wait(timeout=120) == 0
        return self.figures()

    # -- the crash rule ----------------------------------------------------

    def figures(self):
        if self.platform == "android":
            delivered = Counter((d["message"]["data"].get("ctx_idempotency_key"), d["token"]) for d in self.record_lines())
        else:
            delivered = Counter((d["payload"].get("ctx_idempotency_key"), d["device_token"]) for d in self.record_lines())
        states = dict(self.rows("SELECT idempotency_key, state FROM messages"))
        outcome_rows = self.rows("""
            SELECT m.idempotency_key, o.device_token, o.status FROM outcomes o
            JOIN messages m ON m.id = o.message_id""")
        unconfirmed = {(k, t) for k, t, s in outcome_rows if s == "unconfirmed"}
        pairs = {(f"crash-{u}-{i}", token(u, k, self.platform))
                 for u in range(self.users) for i in range(self.per_user) for k in range(self.devices)}
        delivered_keys = {k for k, _ in delivered}
        keys = {k for k, _ in pairs}
        return {
            "kills": self.kills,
            "messages": self.messages,
            "pushes": len(pairs),
            "delivered": len(set(delivered) & pairs),
            # never delivered and not UNCONFIRMED: dropped without a trace
            "lost": len(pairs - set(delivered) - unconfirmed),
            "duplicates": sum(n - 1 for n in delivered.values() if n > 1),
            "delivered_but_failed": sum(1 for k in delivered_keys if states.get(k) == "failed"),
            "failed": sum(1 for s in states.values() if s == "failed"),
            "sent": sum(1 for s in states.values() if s == "sent"),
            "unconfirmed": len(unconfirmed),
            "unconfirmed_delivered": len(unconfirmed & set(delivered)),
            # marked handed over, killed before the bytes reached APNs (the
            # mark is durable first by design): never resent, so not delivered
            "unconfirmed_not_delivered": len(unconfirmed - set(delivered)),
            "messages_reaching_no_device": len(keys - delivered_keys),
            "never_handed_over": len(self.never_handed_over),
            "never_handed_over_then_delivered": len(self.never_handed_over & set(delivered)),
            # sent after the restart, but a later kill caught them between mark and write
            "never_handed_over_then_unconfirmed": len((self.never_handed_over & unconfirmed) - set(delivered)),
        }
