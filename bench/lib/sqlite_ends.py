"""SQLite's own instructions per dispatched push, for trying a schema or trigger
change without a release build (a few minutes instead of bench/dispatch-instructions.sh's ten).

    python3 bench/lib/sqlite_ends.py FRESH.sqlite OUT.sqlite N K [CHANGE.sql]

FRESH.sqlite: a database a release `herald serve` created (and was stopped on);
it is copied to OUT.sqlite, CHANGE.sql (the schema change to try) applied, N
SCHEDULED messages inserted, then K of them dispatched in batches of 50 as the
store does it: one transaction of claims (`MessageRows.claimWaiting`) and
hand-over marks, one of ends (the outcome's INSERT, the marks' DELETE,
`SQLiteStore.endSQL`). The statements are copies of the store's (schema v14):
keep them in step. Run it under callgrind for K and 2K with the same N,
collecting inside SQLite only, and subtract:

    valgrind --tool=callgrind --toggle-collect=sqlite3_step --callgrind-out-file=k1.cg \
        "$(python3 -c 'import sys; print(sys.executable)')" bench/lib/sqlite_ends.py FRESH OUT 2000 1000
    (same with 2000, then (total(2000) - total(1000)) / 1000 per push)

Python's `sqlite3` must load the SQLite the server links (check `ldd`)."""
import sqlite3, sys, shutil
src, dst, n_total, k = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
change = sys.argv[5] if len(sys.argv) > 5 else None
shutil.copy(src, dst)
db = sqlite3.connect(dst, isolation_level=None)
db.execute("PRAGMA journal_mode=WAL"); db.execute("PRAGMA synchronous=NORMAL"); db.execute("PRAGMA foreign_keys=ON")
db.execute("PRAGMA cache_size=-65536"); db.execute("PRAGMA temp_store=MEMORY")
if change:
    with open(change) as f:
        db.executescript(f.read())
now = 1_800_000_000_000
cols = "id, bundle_id, platform, user_id, campaign_id, idempotency_key, delivery_method, ab_test, window_start, window_end, due_at, state, created_at, updated_at, request, funnel"
db.execute("BEGIN")
for i in range(n_total):
    db.execute(f"INSERT INTO messages({cols}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,0)",
               (f"{i:08d}-aaaa-bbbb-cccc-dddddddddddd", "com.example.app", "ios", f"user-{i%20:04d}", "camp-1", f"key-{i}",
                "traditional", i % 2, now, now + 3_600_000, now + 1000, "scheduled", now, now, b"x" * 300))
db.execute("INSERT INTO state_counts(state,n) SELECT state, count(*) FROM messages GROUP BY state ON CONFLICT(state) DO UPDATE SET n=n+excluded.n")
db.execute("INSERT INTO campaign_funnel(bundle_id,campaign_id,delivery_method,ab_test,funnel,policy,n) SELECT bundle_id,campaign_id,delivery_method,ab_test,funnel,0,count(*) FROM messages WHERE true GROUP BY 1,2,3,4,5 ON CONFLICT DO UPDATE SET n=n+excluded.n")
db.execute("COMMIT")
claim = """UPDATE messages
SET sending_since = ?3, send_started_at = coalesce(send_started_at, ?3),
    push_started_at = coalesce(push_started_at, ?3), attempts = attempts + 1, updated_at = ?3
WHERE id = ?1 AND state IN ('scheduled', 'handed_off') AND sending_since IS NULL
RETURNING id, bundle_id, platform, user_id, campaign_id, idempotency_key, delivery_method, ab_test, window_start, window_end, due_at, state, created_at, updated_at, attempts, last_error, provider_message_id, sending_since, send_started_at, push_started_at, request, transactional"""
mark = "INSERT OR IGNORE INTO handovers(message_id, device_token, push, at) VALUES (?1, ?2, ?3, ?4)"
outcome = """INSERT INTO outcomes(message_id, device_token, status, provider_message_id, reason, at, http_status, attempts, environment, not_before)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT DO NOTHING"""
forget = "DELETE FROM handovers WHERE message_id = ?1"
end = """UPDATE messages
SET state = ?3, due_at = coalesce(?4, due_at), provider_message_id = coalesce(?5, provider_message_id),
    last_error = coalesce(?6, last_error), sending_since = NULL, push_started_at = NULL, updated_at = ?7,
    handed_off_at = CASE WHEN ?3 = 'handed_off' THEN coalesce(handed_off_at, ?7) ELSE handed_off_at END,
    sent_at = CASE WHEN ?3 = 'sent' THEN coalesce(sent_at, ?7) ELSE sent_at END,
    displayed_at = CASE WHEN ?3 = 'displayed' THEN coalesce(displayed_at, ?7) ELSE displayed_at END,
    funnel = ((CASE ?3 WHEN 'cancelled' THEN 1 WHEN 'failed' THEN 2 WHEN 'expired' THEN 3 WHEN 'no_devices' THEN 4 WHEN 'superseded' THEN 5 ELSE 0 END) * 16
        + (?3 = 'handed_off' OR handed_off_at IS NOT NULL) + 2 * (?3 = 'sent' OR sent_at IS NOT NULL)
        + 4 * (?3 = 'displayed' OR displayed_at IS NOT NULL) + 8 * (opened_at IS NOT NULL))
WHERE id = ?1 AND state = ?2"""
tok = "ab" * 32
for b in range(0, k, 50):
    ids = [f"{i:08d}-aaaa-bbbb-cccc-dddddddddddd" for i in range(b, min(k, b + 50))]
    db.execute("BEGIN IMMEDIATE")
    for i in ids:
        list(db.execute(claim, (i, None, now + 2000)))
        db.execute(mark, (i, tok, now + 2000, now + 2001))
    db.execute("COMMIT")
    db.execute("BEGIN IMMEDIATE")
    for i in ids:
        db.execute(outcome, (i, tok, "sent", "prov-" + i, None, now + 2002, 200, 1, "production", None))
        db.execute(forget, (i,))
        db.execute(end, (i, "scheduled", "sent", None, "prov-" + i, None, now + 2002))
    db.execute("COMMIT")
sc = dict(db.execute("SELECT state, n FROM state_counts"))
assert sc.get("sent", 0) == k and sc.get("scheduled") == n_total - k, sc
assert db.execute("SELECT count(*) FROM events WHERE kind='sent' AND device_token IS NULL").fetchone()[0] == k
print("ok", k, sc)
