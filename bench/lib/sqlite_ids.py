"""Isolates the Schedule write path in SQLite (Herald's schema v1, WAL,
synchronous=FULL, batches like group commit): random UUIDv4 message ids and
keys (what Herald does) vs time-ordered UUIDv7, and default auto-checkpoint vs
none. Prints seconds and bytes written per insert. Not Herald itself: Python's
sqlite3 module on the system libsqlite3 (same library Herald links)."""
from __future__ import annotations

import os
import pathlib
import re
import sqlite3
import sys
import tempfile
import time
import uuid

ROOT = pathlib.Path(__file__).resolve().parents[2]
src = (ROOT / "Sources/HeraldStorage/SQLite/Schema.swift").read_text()
SCHEMA = re.search(r'static let v1 = """\n(.*?)\n\s*"""', src, re.S).group(1)


def uuid7(counter=[0]):
    ms = time.time_ns() // 1_000_000
    counter[0] += 1
    rnd = int.from_bytes(os.urandom(10), "big")
    v = (ms << 80) | (0x7 << 76) | ((counter[0] & 0xFFF) << 64) | (0b10 << 62) | (rnd & ((1 << 62) - 1))
    return str(uuid.UUID(int=v))


def run(n, batch, ordered, autockpt):
    d = tempfile.mkdtemp(prefix="herald-sqlite-ids-", dir=os.environ.get("BENCH_TMP", "/tmp"))
    path = os.path.join(d, "h.sqlite")
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("PRAGMA cache_size=-16000")
    db.execute(f"PRAGMA wal_autocheckpoint={1000 if autockpt else 0}")
    db.executescript(SCHEMA)
    blob = os.urandom(300)
    due = int(time.time() * 1000) + 86_400_000
    v4 = lambda: str(uuid.uuid4())
    gen = uuid7 if ordered else v4
    keygen = v4 if ordered == "id-only" else gen
    with open(f"/proc/self/io") as f:
        w0 = int(dict(l.split(": ") for l in f)["wchar"])
    t = time.perf_counter()
    for b in range(n // batch):
        db.execute("BEGIN IMMEDIATE")
        for _ in range(batch):
            mid, key = gen(), keygen()
            db.execute("SAVEPOINT op")
            db.execute("SELECT * FROM messages WHERE id = (SELECT message_id FROM message_keys WHERE bundle_id=? AND idempotency_key=?)",
                       ("com.example.app", key)).fetchall()
            db.execute("INSERT INTO messages(id,bundle_id,platform,user_id,campaign_id,idempotency_key,delivery_method,ab_test,"
                       "window_start,window_end,due_at,state,created_at,updated_at,attempts,request) VALUES "
                       "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,0,?)",
                       (mid, "com.example.app", "ios", "user-000042", "daily-digest", key, "traditional", 0,
                        due, due + 14_400_000, due, "scheduled", due, due, blob))
            db.execute("INSERT INTO message_keys(bundle_id,idempotency_key,message_id) VALUES (?,?,?) "
                       "ON CONFLICT(bundle_id,idempotency_key) DO UPDATE SET message_id=excluded.message_id",
                       ("com.example.app", key, mid))
            db.execute("RELEASE op")
        db.execute("COMMIT")
    el = time.perf_counter() - t
    with open(f"/proc/self/io") as f:
        w1 = int(dict(l.split(": ") for l in f)["wchar"])
    db.close()
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    os.rmdir(d)
    return el, (w1 - w0) / n


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 256
    print(f"{n} inserts, batches of {batch}, loadavg {open('/proc/loadavg').read().split()[:3]}")
    names = {False: "id v4, key v4 (Herald now)", True: "id v7, key v7            ", "id-only": "id v7, key v4 (client key)"}
    for ordered in (False, True, "id-only"):
        for autockpt in (True, False):
            el, w = run(n, batch, ordered, autockpt)
            print(f"{names[ordered]} auto-checkpoint {'1000 pages' if autockpt else 'off       '}: "
                  f"{n / el:,.0f} inserts/s ({1e6 * el / n:.1f} µs each), {w / 1024:.1f} KiB written per insert")
