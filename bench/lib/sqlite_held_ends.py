"""The store writer's SQLite work per push in a release of held messages vs a
plain dispatch, at scale, without a server (issue 26's release budget):

    python3 bench/lib/sqlite_held_ends.py FRESH.sqlite OUT.sqlite N held|plain [CHANGE.sql]

FRESH.sqlite: a database a release `herald serve` created (and was stopped
on), copied to OUT.sqlite, CHANGE.sql (a schema change to try) applied; N
SCHEDULED messages inserted in id order (time-ordered ids, as Herald's
UUIDv7). `held`: each is then claimed and held as the store does it
(`MessageRows.claim`, `SQLiteStore.holdUpdate`, a WAITING outcome),
50 per transaction. Then all N are dispatched as the store does it, 50 per
transaction: claims and hand-over marks, then the outcome's INSERT, the
marks' DELETE and `SQLiteStore.endSQL`. Prints this process's CPU per push
for each statement and COMMIT, and the WAL frames per push (no
checkpoint during the drain). The statements (store_statements.py) are
copies of the store's: keep them in step. Run `plain` and `held`
alternately, several times: the figures move by 10-30 % between runs on a shared VM.

Python's `sqlite3` uses SQLite's own page cache, not Herald's wrapper
(Sources/CInterop/sqlite_pcache.c): the `held` COMMITs here still pay
pcache1's walk of the whole cache after b-tree swaps, which the server no
longer does; compare the statements, not the COMMITs.

2026-11-29, N=20,000, schema v14 (µs CPU a push, Python's call included):
end 65 plain / 72-73 held; with schema v15's `messages_policy` 61 / 60."""
import sys, time, resource
from store_statements import (MESSAGE_COLUMNS, open_copy, claim, hold, mark, record_outcome, forget, end, seed_counts, seed_funnel,
                              state_event, count_state, count_campaign)
src, dst, n, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
change = sys.argv[5] if len(sys.argv) > 5 else None
db = open_copy(src, dst, change)
now = 1_800_000_000_000
cols = MESSAGE_COLUMNS
ids = [f"0190{i:08x}-7aaa-bbbb-cccc-dddddddddddd" for i in range(n)]
for b in range(0, n, 1000):
    db.execute("BEGIN")
    for j in range(b, min(n, b + 1000)):
        db.execute(f"INSERT INTO messages({cols}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,0)",
                   (ids[j], "com.example.app", "ios", f"user-{j%1000:04d}", "daily-digest", f"key-{j}",
                    "traditional", j % 2, now, now + 86_400_000, now + j, "scheduled", now + j, now + j, b"x" * 300))
    db.execute("COMMIT")
db.execute(seed_counts)
db.execute(seed_funnel)
tok = "ab" * 32
SUBJECT = ("com.example.app", None, "user-0001", "camp-1", "ios")
E = now + 10_000_000
if mode == "held":
    for b in range(0, n, 50):
        batch = ids[b:b + 50]
        db.execute("BEGIN IMMEDIATE")
        for i in batch:
            claim(db, i, now + 5000)
        db.execute("COMMIT")
        db.execute("BEGIN IMMEDIATE")
        for i in batch:
            assert db.execute(hold, (i, "scheduled", E, now + 5001)).rowcount == 1
            record_outcome(db, (i, tok, "waiting", None, "quiet_hours", now + 5001, None, None, None, E), SUBJECT)
        db.execute("COMMIT")
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
db.execute("PRAGMA wal_autocheckpoint=0")
import os
t0, c0 = time.perf_counter(), time.process_time()
acc = {}
pc = time.process_time
def T(name, fn, *args):
    a = pc(); r = fn(*args); acc[name] = acc.get(name, 0) + pc() - a; return r
def X(name, sql, args=()):
    return T(name, lambda: list(db.execute(sql, args)))
for b in range(0, n, 50):
    batch = ids[b:b + 50]
    X("begin1", "BEGIN IMMEDIATE")
    for i in batch:
        T("claim", claim, db, i, E + 2000)
        X("mark", mark, (i, tok, E + 2000, E + 2001))
    X("commit1", "COMMIT")
    X("begin2", "BEGIN IMMEDIATE")
    for i in batch:
        T("outcome", record_outcome, db, (i, tok, "sent", "prov-" + i, None, E + 2002, 200, 1, "production", None), SUBJECT)
        X("forget", forget, (i,))
        X("end", end, (i, "scheduled", "sent", None, "prov-" + i, None, E + 2002))
        # Schema v17: the writer's state event after the end (`MessageChanges`).
        X("event", state_event, (SUBJECT[0], E + 2002, "sent", i, SUBJECT[1], SUBJECT[2], SUBJECT[3], SUBJECT[4]))
    # … and its counts' sums before the commit (the campaign's: one key each way, as here).
    X("counts", count_state, ("scheduled", -len(batch)))
    X("counts", count_state, ("sent", len(batch)))
    for funnel, k in ((0, -len(batch)), (2, len(batch))):
        X("counts", count_campaign, (SUBJECT[0], SUBJECT[3], "traditional", 0, funnel, 0, k))
    X("commit2", "COMMIT")
print(f"wal frames/push {os.path.getsize(dst + '-wal') / 4120 / n:.2f}", " ".join(f"{k} {1e6*v/n:.1f}" for k, v in acc.items()))
t1, c1 = time.perf_counter(), time.process_time()
sc = dict(db.execute("SELECT state, n FROM state_counts"))
assert sc.get("sent", 0) == n, sc
print(f"{mode} n={n}: drain {1e6*(c1-c0)/n:.1f} us CPU/push, {1e6*(t1-t0)/n:.1f} us wall/push; maxrss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} kB")
