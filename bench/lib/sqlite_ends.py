"""SQLite's own instructions per dispatched push, for trying a schema or trigger
change without a release build (a few minutes instead of bench/dispatch-instructions.sh's ten).

    python3 bench/lib/sqlite_ends.py FRESH.sqlite OUT.sqlite N K [CHANGE.sql]

FRESH.sqlite: a database a release `herald serve` created (and was stopped on);
it is copied to OUT.sqlite, CHANGE.sql (the schema change to try) applied, N
SCHEDULED messages inserted, then K of them dispatched in batches of 50 as the
store does it: one transaction of claims (`MessageRows.claim`) and
hand-over marks, one of ends (the outcome's INSERT, the marks' DELETE,
`SQLiteStore.endSQL`, then schema v17's writer upkeep: the state event
after each end, the counts' sums before the commit). The statements (store_statements.py) are copies of
the store's: keep them in step. Run it under callgrind for K and 2K with the same N,
collecting inside SQLite only, and subtract:

    valgrind --tool=callgrind --toggle-collect=sqlite3_step --callgrind-out-file=k1.cg \
        "$(python3 -c 'import sys; print(sys.executable)')" bench/lib/sqlite_ends.py FRESH OUT 2000 1000
    (same with 2000, then (total(2000) - total(1000)) / 1000 per push)

Python's `sqlite3` must load the SQLite the server links (check `ldd`). The
counts and events are checked at the end, except for a CHANGE.sql that says it
is "a bound, not a design" (bench/experiments/sqlite-ends/). bench/sqlite-ends.sh
runs all of this."""
import sys
from store_statements import open_copy, seed_pending, claim_batches, record_outcome, forget, end, state_event, count_state, count_campaign
src, dst, n_total, k = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
change = sys.argv[5] if len(sys.argv) > 5 else None
db = open_copy(src, dst, change)
now = 1_800_000_000_000
seed_pending(db, n_total, now)
tok = "ab" * 32
for ids in claim_batches(db, k, now + 2000, tok):
    db.execute("BEGIN IMMEDIATE")
    campaigns = {}
    for i in ids:
        record_outcome(db, (i, tok, "sent", "prov-" + i, None, now + 2002, 200, 1, "production", None),
                       ("com.example.app", f"key-{i}", "user-0001", "camp-1", "ios"))
        db.execute(forget, (i,))
        db.execute(end, (i, "scheduled", "sent", None, "prov-" + i, None, now + 2002))
        # Schema v17: the writer's upkeep after the statement (`MessageChanges.apply`):
        # the state event; the campaign count moves from funnel 0 to 2 (sent).
        db.execute(state_event, ("com.example.app", now + 2002, "sent", i, f"key-{i}", "user-0001", "camp-1", "ios"))
        ab = int(i[:8]) % 2
        for funnel, n in ((0, -1), (2, 1)):
            key = ("com.example.app", "camp-1", "traditional", ab, funnel, 0)
            campaigns[key] = campaigns.get(key, 0) + n
    # … and before the commit, the sums (`MessageChanges.write`).
    db.execute(count_state, ("scheduled", -len(ids)))
    db.execute(count_state, ("sent", len(ids)))
    for key, n in campaigns.items():
        if n:
            db.execute(count_campaign, key + (n,))
    db.execute("COMMIT")
if change and "a bound, not a design" in open(change).read():
    print("ok", k, "(a bound: counts and events not checked)")
    raise SystemExit(0)
sc = dict(db.execute("SELECT state, n FROM state_counts"))
assert sc.get("sent", 0) == k and sc.get("scheduled") == n_total - k, sc
assert db.execute("SELECT count(*) FROM events WHERE kind='sent' AND device_token IS NULL").fetchone()[0] == k
assert dict(db.execute("SELECT funnel, sum(n) FROM campaign_funnel GROUP BY funnel")).get(2) == k
print("ok", k, sc)
