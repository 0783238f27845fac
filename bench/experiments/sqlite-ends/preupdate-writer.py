"""Schema v16. The store's maintenance triggers replaced by the writer itself, SQLite's side only
(bench/RESULTS.md, Session 45): with CHANGE.sql = no-triggers.sql, each end transaction writes the
outcome and its event (as today), the end's UPDATE (no trigger fires), the state event directly, and
the state and campaign counts once per transaction from deltas. The old and new column values would
come from a pre-update hook (sqlite3_preupdate_hook; Debian's SQLite has it) at no SQL cost: not
counted here, nor is the hook's own work (a few sqlite3_preupdate_old/new reads a row).

    bench/sqlite-ends.sh --script bench/experiments/sqlite-ends/preupdate-writer.py \
        bench/experiments/sqlite-ends/no-triggers.sql"""
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from store_statements import open_copy, seed_pending, claim_batches, record_outcome, forget, end
src, dst, n_total, k = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
change = sys.argv[5] if len(sys.argv) > 5 else None
db = open_copy(src, dst, change)
now = 1_800_000_000_000
seed_pending(db, n_total, now)
tok = "ab" * 32
EV = ("INSERT INTO events(bundle_id, at, kind, message_id, idempotency_key, user_id, campaign_id, platform) "
      "VALUES (?,?,?,?,?,?,?,?)")
CF = ("INSERT INTO campaign_funnel(bundle_id, campaign_id, delivery_method, ab_test, funnel, policy, n) "
      "VALUES (?,?,?,?,?,?,?) ON CONFLICT DO UPDATE SET n = n + excluded.n")
SC = "INSERT INTO state_counts(state, n) VALUES (?1, ?2) ON CONFLICT(state) DO UPDATE SET n = n + excluded.n"
for ids in claim_batches(db, k, now + 2000, tok):
    db.execute("BEGIN IMMEDIATE")
    deltas = {}
    for n, i in enumerate(ids):
        record_outcome(db, (i, tok, "sent", "prov-" + i, None, now + 2002, 200, 1, "production", None),
                       ("com.example.app", f"key-{i}", "user-0001", "camp-1", "ios"))
        db.execute(forget, (i,))
        db.execute(end, (i, "scheduled", "sent", None, "prov-" + i, None, now + 2002))
        db.execute(EV, ("com.example.app", now + 2002, "sent", i, f"key-{i}", "user-0001", "camp-1", "ios"))
        ab = int(i[:8]) % 2  # the hook's old and new values: (…, funnel 0) → (…, funnel 2)
        deltas[("com.example.app", "camp-1", "traditional", ab, 0, 0)] = deltas.get(("com.example.app", "camp-1", "traditional", ab, 0, 0), 0) - 1
        deltas[("com.example.app", "camp-1", "traditional", ab, 2, 0)] = deltas.get(("com.example.app", "camp-1", "traditional", ab, 2, 0), 0) + 1
    for key, n in deltas.items():
        if n:
            db.execute(CF, key + (n,))
    db.execute(SC, ("scheduled", -len(ids)))
    db.execute(SC, ("sent", len(ids)))
    db.execute("COMMIT")
sc = dict(db.execute("SELECT state, n FROM state_counts"))
assert sc.get("sent", 0) == k and sc.get("scheduled") == n_total - k, sc
assert db.execute("SELECT count(*) FROM events WHERE kind='sent' AND device_token IS NULL").fetchone()[0] == k
cf = dict(db.execute("SELECT funnel, sum(n) FROM campaign_funnel GROUP BY funnel"))
assert cf.get(2) == k, cf
print("ok", k, sc)
