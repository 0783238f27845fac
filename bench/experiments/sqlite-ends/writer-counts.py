"""Schema v15. The writer keeping counts and events itself, SQLite's side only (measured, not adopted:
bench/RESULTS.md, Session 44). As bench/lib/sqlite_ends.py, with CHANGE.sql =
triggers-behind-a-flag.sql: each end transaction sets writer_flags.skip, appends the
outcome and state events itself, takes the old funnel from a scratch column
(`prior_funnel = funnel` in the UPDATE, RETURNING it) and adds the state and campaign
counts once per transaction.

    bench/sqlite-ends.sh --script bench/experiments/sqlite-ends/writer-counts.py \
        bench/experiments/sqlite-ends/triggers-behind-a-flag.sql"""
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from store_statements import open_copy, seed_pending, claim_batches, outcome, forget, end
src, dst, n_total, k = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
change = sys.argv[5] if len(sys.argv) > 5 else None
db = open_copy(src, dst, change)
now = 1_800_000_000_000
seed_pending(db, n_total, now)
tok = "ab" * 32
from store_statements import end as END
END2 = END.replace("updated_at = ?7,", "updated_at = ?7, prior_funnel = funnel,") + " RETURNING bundle_id, campaign_id, delivery_method, ab_test, funnel, prior_funnel, deferred_at"
EV = "INSERT INTO events(bundle_id, at, kind, message_id, idempotency_key, user_id, campaign_id, platform, device_token, reason, http_status) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
CF = "INSERT INTO campaign_funnel(bundle_id, campaign_id, delivery_method, ab_test, funnel, policy, n) VALUES (?,?,?,?,?,?,?) ON CONFLICT DO UPDATE SET n = n + excluded.n"
SC = "INSERT INTO state_counts(state, n) VALUES (?1, ?2) ON CONFLICT(state) DO UPDATE SET n = n + excluded.n"
for ids in claim_batches(db, k, now + 2000, tok):
    db.execute("BEGIN IMMEDIATE")
    db.execute("UPDATE writer_flags SET skip = 1")
    deltas = {}
    for i in ids:
        db.execute(outcome, (i, tok, "sent", "prov-" + i, None, now + 2002, 200, 1, "production", None))
        db.execute(EV, ("com.example.app", now+2002, "sent", i, "key", "user-0001", "camp-1", "ios", tok, None, 200))
        db.execute(forget, (i,))
        r = list(db.execute(END2, (i, "scheduled", "sent", None, "prov-" + i, None, now + 2002)))
        db.execute(EV, ("com.example.app", now+2002, "sent", i, "key", "user-0001", "camp-1", "ios", None, None, None))
        b_, c_, m_, a_, nf, of_, d_ = r[0]
        deltas[(b_, c_, m_, a_, of_, 0)] = deltas.get((b_, c_, m_, a_, of_, 0), 0) - 1
        deltas[(b_, c_, m_, a_, nf, 0)] = deltas.get((b_, c_, m_, a_, nf, 0), 0) + 1
    for k_, n_ in deltas.items():
        if n_: db.execute(CF, k_ + (n_,))
    db.execute(SC, ("scheduled", -len(ids))); db.execute(SC, ("sent", len(ids)))
    db.execute("UPDATE writer_flags SET skip = 0")
    db.execute("COMMIT")
sc = dict(db.execute("SELECT state, n FROM state_counts"))
assert sc.get("sent", 0) == k and sc.get("scheduled") == n_total - k, sc
assert db.execute("SELECT count(*) FROM events WHERE kind='sent' AND device_token IS NULL").fetchone()[0] == k
print("ok", k, sc)
