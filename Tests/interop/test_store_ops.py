"""Operating the store with the real binary: one writer per data directory
(a second `herald serve` exits at once; kill -9 releases the lock), and
`herald backup` while the server runs, restored into a fresh data directory.

Hostile cases first. Every wait is for a condition, bounded by a deadline."""
from __future__ import annotations

import datetime as dt
import os
import shutil
import signal
import subprocess
import threading
import time

import grpc

from conftest import herald_binary, start_herald

BUNDLE = "com.example.app"


def later():
    """A window start never reached during a test (the limit is 168 h ahead)."""
    return (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=100)).isoformat()


def run(*args, timeout=60):
    return subprocess.run([herald_binary(), *args], capture_output=True, text=True, timeout=timeout)


def error_lines(result):
    return [line for line in result.stderr.splitlines() if line.strip()]


class Api:
    def __init__(self, stubs, address):
        self.t, self.p, self.d, self.r = stubs.types_pb2, stubs.push_pb2, stubs.device_pb2, stubs.read_pb2
        self.channel = grpc.insecure_channel(address)
        self.push = stubs.push_pb2_grpc.PushServiceStub(self.channel)
        self.devices = stubs.device_pb2_grpc.DeviceServiceStub(self.channel)

    def register(self, user, token):
        t = self.t
        return self.devices.RegisterDevice(self.d.RegisterDeviceRequest(
            bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=user, device_token=token, locale="en",
            timezone="UTC", environment=t.APNS_ENVIRONMENT_SANDBOX), timeout=10)

    def schedule(self, user, key, after=None):
        t = self.t
        request = self.p.ScheduleRequest(
            bundle_id=BUNDLE, platform=t.PLATFORM_IOS, user_id=user, campaign_id="camp", idempotency_key=key,
            delivery_method=t.DELIVERY_METHOD_TRADITIONAL, deliver_within_hours=1,
            content=t.Content(title=t.LocalizedText(text="Hi"), body=t.LocalizedText(text="There")))
        if after:
            request.deliver_after = after
        return self.push.Schedule(request, timeout=30)

    def get(self, message_id):
        return self.push.GetMessage(self.r.GetMessageRequest(bundle_id=BUNDLE, message_id=message_id), timeout=10)

    def list_all(self, user):
        """Every message of `user`, all pages."""
        messages, token = [], ""
        while True:
            reply = self.push.ListMessages(self.r.ListMessagesRequest(
                bundle_id=BUNDLE, user_id=user, page_size=500, page_token=token), timeout=10)
            messages.extend(reply.messages)
            token = reply.next_page_token
            if not token:
                return messages

    def wait_state(self, message_id, state, timeout=30.0):
        want = self.t.MessageState.Value(state)
        deadline = time.monotonic() + timeout
        while True:
            reply = self.get(message_id)
            if reply.message.state == want:
                return reply
            assert time.monotonic() < deadline, reply
            time.sleep(0.02)


# MARK: one writer per data directory (hostile first)

def test_a_second_serve_on_the_same_data_dir_exits_at_once_naming_it_and_the_holder(tmp_path, stubs):
    data = str(tmp_path / "data")
    first = start_herald(data_dir=data)
    try:
        started = time.monotonic()
        second = run("serve", "--port", "0", "--data-dir", data)
        assert time.monotonic() - started < 10, "the second instance must not wait for the lock"
        assert second.returncode != 0
        assert "listening" not in second.stdout
        lines = error_lines(second)
        assert len(lines) == 1, second.stderr
        assert data in lines[0] and f"PID {first.proc.pid}" in lines[0], lines[0]
        with open(os.path.join(data, "herald.lock")) as lock:
            assert lock.read() == f"{first.proc.pid}\n"
        # The first one is untouched and still serves.
        api = Api(stubs, first.address)
        assert api.register("u-lock", "ab" * 32).created
        api.channel.close()
    finally:
        assert first.stop() == 0


def test_a_lock_file_that_is_not_a_file_stops_start_up_with_one_line(tmp_path):
    data = tmp_path / "data"
    (data / "herald.lock").mkdir(parents=True)
    result = run("serve", "--port", "0", "--data-dir", str(data))
    assert result.returncode != 0
    lines = error_lines(result)
    assert len(lines) == 1 and str(data / "herald.lock") in lines[0] and "Is a directory" in lines[0], result.stderr


def test_kill_9_releases_the_lock_and_a_restart_keeps_the_data(tmp_path, stubs):
    data = str(tmp_path / "data")
    first = start_herald(data_dir=data)
    api = Api(stubs, first.address)
    message_id = api.schedule("u-kill", "k-kill", after=later()).message_id
    api.channel.close()
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(timeout=30)
    second = start_herald(data_dir=data)
    try:
        api = Api(stubs, second.address)
        assert api.get(message_id).message.message_id == message_id
        api.channel.close()
        with open(os.path.join(data, "herald.lock")) as lock:
            assert lock.read() == f"{second.proc.pid}\n"
    finally:
        assert second.stop() == 0


# MARK: retention

def test_retention_flags_are_validated(tmp_path):
    for flag, value in (("--retention-days", "0"), ("--retention-days", "abc"), ("--retention-seconds", "0")):
        result = run("serve", "--port", "0", "--data-dir", str(tmp_path / "data"), flag, value)
        assert result.returncode != 0 and flag in result.stderr, (flag, value, result.stderr)


def test_a_sent_message_keeps_its_key_until_retention_deletes_it(tmp_path, stubs):
    server = start_herald("--grace-seconds", "0", "--retention-seconds", "2", data_dir=str(tmp_path / "data"))
    try:
        api = Api(stubs, server.address)
        assert api.register("u-ret", "cd" * 32).created
        waiting = api.schedule("u-ret", "k-waiting", after=later()).message_id
        first = api.schedule("u-ret", "k-ret").message_id
        api.wait_state(first, "MESSAGE_STATE_SENT")
        # Within the retention: the key is spent, a second Schedule is ALREADY_EXISTS.
        try:
            api.schedule("u-ret", "k-ret")
            raise AssertionError("a sent message's key must answer ALREADY_EXISTS")
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.ALREADY_EXISTS:
                raise
        # Then the finished message goes (a pass a second, 2 s after it was sent).
        deadline = time.monotonic() + 30
        while True:
            try:
                api.get(first)
            except grpc.RpcError as error:
                assert error.code() == grpc.StatusCode.NOT_FOUND
                break
            assert time.monotonic() < deadline, "the sent message was not deleted"
            time.sleep(0.1)
        # The waiting one stays; the key now schedules a new message.
        assert api.get(waiting).message.message_id == waiting
        second = api.schedule("u-ret", "k-ret", after=later())
        assert second.message_id != first
        api.channel.close()
    finally:
        assert server.stop() == 0


# MARK: backup and restore (hostile first)

def test_backup_refuses_an_existing_file_and_a_missing_store(tmp_path):
    data = tmp_path / "data"
    missing = run("backup", "--data-dir", str(data), str(tmp_path / "x.bak"))
    assert missing.returncode != 0 and "no store" in missing.stderr
    assert not (tmp_path / "x.bak").exists()

    server = start_herald(data_dir=str(data))
    try:
        existing = tmp_path / "existing.bak"
        existing.write_bytes(b"keep me")
        result = run("backup", "--data-dir", str(data), str(existing))
        assert result.returncode != 0
        lines = error_lines(result)
        assert len(lines) == 1 and str(existing) in lines[0] and "refusing to overwrite" in lines[0], result.stderr
        assert existing.read_bytes() == b"keep me"
    finally:
        assert server.stop() == 0


def test_backup_while_serving_then_restore_has_every_message_and_device(tmp_path, stubs):
    data = str(tmp_path / "data")
    server = start_herald("--grace-seconds", "0", data_dir=data)
    api = Api(stubs, server.address)
    users = [f"user-{i}" for i in range(20)]
    tokens = {user: f"{i:02x}" * 32 for i, user in enumerate(users)}
    for user in users:
        assert api.register(user, tokens[user]).created
    scheduled = {}
    for i in range(200):
        user = users[i % len(users)]
        scheduled[api.schedule(user, f"k-{i}", after=later()).message_id] = user
    # One delivered now (grace 0, the bundled simulator): a SENT message with outcomes.
    sent_id = api.schedule(users[0], "k-sent").message_id
    api.wait_state(sent_id, "MESSAGE_STATE_SENT")
    scheduled[sent_id] = users[0]

    # Writes keep going while the backup runs.
    stop = threading.Event()
    during = []

    def keep_scheduling():
        i = 0
        while not stop.is_set():
            during.append(api.schedule("user-during", f"kd-{i}", after=later()).message_id)
            i += 1
    writer = threading.Thread(target=keep_scheduling)
    writer.start()
    try:
        deadline = time.monotonic() + 30
        while len(during) < 20:
            assert time.monotonic() < deadline, "the load did not start"
            time.sleep(0.01)
        backup = tmp_path / "herald-backup.sqlite"
        result = run("backup", "--data-dir", data, str(backup))
    finally:
        stop.set()
        writer.join(timeout=60)
    assert result.returncode == 0, result.stderr
    summary = result.stdout.strip()
    assert str(backup) in summary and "20 devices" in summary, summary
    copied = int(summary.split(" messages")[0].rsplit(" ", 1)[1])
    assert copied >= len(scheduled) + 20, summary
    api.channel.close()
    assert server.stop() == 0

    # Restore as docs/OPERATIONS.md says: a fresh data dir, the file as herald.sqlite, no -wal/-shm.
    restored_dir = tmp_path / "restored"
    restored_dir.mkdir()
    shutil.copyfile(backup, restored_dir / "herald.sqlite")
    assert not (restored_dir / "herald.sqlite-wal").exists()
    restored = start_herald(data_dir=str(restored_dir))
    try:
        api = Api(stubs, restored.address)
        for message_id, user in scheduled.items():
            assert api.get(message_id).message.user_id == user
        assert api.get(sent_id).message.state == stubs.types_pb2.MessageState.Value("MESSAGE_STATE_SENT")
        assert len(api.get(sent_id).devices) >= 1
        listed = {m.message_id for user in users for m in api.list_all(user)}
        assert listed == set(scheduled)
        # Every device is there: registering again updates, it does not create.
        for user in users:
            assert not api.register(user, tokens[user]).created
        # Messages committed while the copy ran are in it up to the copy's snapshot.
        restored_during = {m.message_id for m in api.list_all("user-during")}
        assert copied == len(scheduled) + len(restored_during)
        assert restored_during <= set(during)
        api.channel.close()
    finally:
        assert restored.stop() == 0
