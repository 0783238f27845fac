"""The store's dispatch statements (schema v17), copied for the SQLite-only
benches (sqlite_ends.py, sqlite_held_ends.py): keep them in step with
`MessageRows.claim`, `SQLiteStore.holdUpdate`, `SQLiteStore.insert(_:into:subject:)`,
`SQLiteStore.apply` and `SQLiteStore.endSQL`; `open_copy` opens a copy of a
database with the store's connection settings."""
import shutil
import sqlite3

MESSAGE_COLUMNS = ("id, bundle_id, platform, user_id, campaign_id, idempotency_key, delivery_method, ab_test, "
                   "window_start, window_end, due_at, state, created_at, updated_at, request, funnel")


def open_copy(src: str, dst: str, change: str | None) -> sqlite3.Connection:
    """dst, a copy of src, opened as the store opens its database, with the
    schema change in the file `change` (if any) applied."""
    shutil.copy(src, dst)
    db = sqlite3.connect(dst, isolation_level=None)
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON", "cache_size=-65536", "temp_store=MEMORY"):
        db.execute("PRAGMA " + pragma)
    if change:
        with open(change) as f:
            db.executescript(f.read())
    return db

CLAIM_COLUMNS = ("id, bundle_id, platform, user_id, campaign_id, idempotency_key, delivery_method, ab_test, window_start, "
                 "window_end, due_at, state, created_at, updated_at, attempts, last_error, provider_message_id, sending_since, "
                 "send_started_at, push_started_at, request, transactional")
claim_select = (f"SELECT {CLAIM_COLUMNS}, rowid FROM messages "
                "WHERE id = ?1 AND state IN ('scheduled', 'handed_off') AND sending_since IS NULL")
claim_update = """UPDATE messages
SET sending_since = ?2, send_started_at = coalesce(send_started_at, ?2),
    push_started_at = coalesce(push_started_at, ?2), attempts = attempts + 1, updated_at = ?2
WHERE rowid = ?1"""


def claim(db: sqlite3.Connection, message_id: str, now: int) -> tuple | None:
    """`MessageRows.claim`: the row read, then updated by its rowid."""
    row = db.execute(claim_select, (message_id,)).fetchone()
    if row is not None:
        db.execute(claim_update, (row[-1], now))
    return row


mark = "INSERT OR IGNORE INTO handovers(message_id, device_token, push, at) VALUES (?1, ?2, ?3, ?4)"
outcome = """INSERT INTO outcomes(message_id, device_token, status, provider_message_id, reason, at, http_status, attempts, environment, not_before)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT DO NOTHING"""
# SQLiteStore.insert(_:into:subject:) since schema v16: the outcome's event,
# written by the store with the claimed message's columns (EventSubject).
_KIND = ("CASE ?3 WHEN 'sent' THEN 'sent' WHEN 'handed_off' THEN 'handed_off' WHEN 'unconfirmed' THEN 'unconfirmed' "
         "WHEN 'displayed' THEN 'displayed' WHEN 'opened' THEN 'opened' WHEN 'waiting' THEN 'deferred' "
         "WHEN 'suppressed' THEN 'suppressed' WHEN 'revoked' THEN 'revoked' WHEN 'expired' THEN 'expired' ELSE 'failed' END")
_REASON = ("CASE WHEN ?3 = 'revoke_failed' THEN 'revoke_failed: ' || coalesce(?10, '') "
           "WHEN ?3 IN ('unregistered', 'bad_device_token') THEN coalesce(?10, ?3) ELSE ?10 END")
outcome_event = ("INSERT INTO events(bundle_id, at, kind, message_id, idempotency_key, user_id, campaign_id, platform, "
                 f"device_token, reason, http_status) VALUES (?1, ?2, {_KIND}, ?4, ?5, ?6, ?7, ?8, ?9, {_REASON}, ?11)")


def record_outcome(db: sqlite3.Connection, values: tuple, subject: tuple) -> None:
    """`outcome` with `values` (its ten parameters), then its event when a row
    was written; `subject`: (bundle_id, idempotency_key, user_id, campaign_id,
    platform) of the message."""
    if db.execute(outcome, values).rowcount == 1:
        mid, token, status, _, reason, at, http = values[:7]
        db.execute(outcome_event, (subject[0], at, status, mid, subject[1], subject[2], subject[3], subject[4],
                                   token, reason, http))


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
touched = """(EXISTS (SELECT 1 FROM handovers h WHERE h.message_id = messages.id AND h.push = messages.push_started_at)
 OR EXISTS (SELECT 1 FROM outcomes o WHERE o.message_id = messages.id AND o.at >= messages.push_started_at AND o.status <> 'waiting'))"""
hold = f"""UPDATE messages
SET send_started_at = CASE WHEN send_started_at = sending_since AND NOT {touched} THEN NULL ELSE send_started_at END,
    push_started_at = CASE WHEN {touched} THEN push_started_at ELSE NULL END,
    sending_since = NULL, due_at = ?3, deferred_at = coalesce(deferred_at, ?4), updated_at = ?4
WHERE id = ?1 AND state = ?2 AND sending_since IS NOT NULL"""

# Schema v17's writer upkeep (`MessageChanges`): the state event after a state
# change, the counts' sums before the commit.
state_event = ("INSERT INTO events(bundle_id, at, kind, message_id, idempotency_key, user_id, campaign_id, platform) "
               "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")
count_state = "INSERT INTO state_counts(state, n) VALUES (?1, ?2) ON CONFLICT(state) DO UPDATE SET n = n + excluded.n"
count_campaign = ("INSERT INTO campaign_funnel(bundle_id, campaign_id, delivery_method, ab_test, funnel, policy, n) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO UPDATE SET n = n + excluded.n")

seed_counts = ("INSERT INTO state_counts(state,n) SELECT state, count(*) FROM messages GROUP BY state "
               "ON CONFLICT(state) DO UPDATE SET n=n+excluded.n")
seed_funnel = ("INSERT INTO campaign_funnel(bundle_id,campaign_id,delivery_method,ab_test,funnel,policy,n) "
               "SELECT bundle_id,campaign_id,delivery_method,ab_test,funnel,0,count(*) FROM messages WHERE true "
               "GROUP BY 1,2,3,4,5 ON CONFLICT DO UPDATE SET n=n+excluded.n")


def seed_pending(db: sqlite3.Connection, n: int, now: int) -> None:
    """n SCHEDULED messages (ids `NNNNNNNN-aaaa-…`, 20 users, A/B halves, due at
    now + 1 s) and their counts, in one transaction (sqlite_ends.py)."""
    db.execute("BEGIN")
    for i in range(n):
        db.execute(f"INSERT INTO messages({MESSAGE_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,0)",
                   (f"{i:08d}-aaaa-bbbb-cccc-dddddddddddd", "com.example.app", "ios", f"user-{i % 20:04d}", "camp-1",
                    f"key-{i}", "traditional", i % 2, now, now + 3_600_000, now + 1000, "scheduled", now, now, b"x" * 300))
    db.execute(seed_counts)
    db.execute(seed_funnel)
    db.execute("COMMIT")


def claim_batches(db: sqlite3.Connection, k: int, now: int, token: str):
    """The first k of `seed_pending`'s messages, 50 at a time: each batch
    claimed with a hand-over mark in one transaction (at now), then its ids
    yielded for the caller's ends."""
    for b in range(0, k, 50):
        ids = [f"{i:08d}-aaaa-bbbb-cccc-dddddddddddd" for i in range(b, min(k, b + 50))]
        db.execute("BEGIN IMMEDIATE")
        for i in ids:
            claim(db, i, now)
            db.execute(mark, (i, token, now, now + 1))
        db.execute("COMMIT")
        yield ids
