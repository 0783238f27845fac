"""SQLite's own instructions per released claim (a message parked by a full
route, or held by the policy, gives its claim back: `SQLiteStore.releaseClaim`),
as the store wrote it before a821bf7 (`old`: one UPDATE by id whose two CASEs
each probe handovers and outcomes, RETURNING id) and since (`new`: the row and
whether its push was touched read once, then the UPDATE by rowid).

    python3 bench/lib/sqlite_release.py FRESH.sqlite OUT.sqlite N K old|new

N SCHEDULED messages, the first K claimed (50 to a transaction, as
`claim_batches`), then each released in its own transaction (as the
dispatcher does: one write job per parked message). Run under callgrind
for K and 2K with the same N, collecting inside sqlite3_step only, and
subtract (bench/sqlite-ends.sh does this for its scripts; RESULTS.md,
Session 46, gives the commands)."""
import sys
from store_statements import open_copy, seed_pending, claim_batches, touched


def release_set(touched_sql: str) -> str:
    """The columns a release sets (`MessageRows.releasing(touched:)`)."""
    return (f"send_started_at = CASE WHEN send_started_at = sending_since AND NOT {touched_sql} THEN NULL "
            f"ELSE send_started_at END, push_started_at = CASE WHEN {touched_sql} THEN push_started_at ELSE NULL END, "
            "sending_since = NULL")


OLD = f"UPDATE messages SET {release_set(touched)}, updated_at = ?1 WHERE sending_since IS NOT NULL AND id = ?2 RETURNING id"
NEW_READ = f"SELECT rowid, {touched} FROM messages WHERE id = ?1 AND sending_since IS NOT NULL"
NEW_WRITE = f"UPDATE messages SET {release_set('?3')}, updated_at = ?2 WHERE rowid = ?1"

src, dst, n_total, k, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
db = open_copy(src, dst, None)
now = 1_800_000_000_000
seed_pending(db, n_total, now)
claimed = [i for ids in claim_batches(db, k, now + 2000, "ab" * 32) for i in ids]
# The marks were written with the claims; a parked message has none: drop them.
db.execute("DELETE FROM handovers")
released = 0
for i in claimed:
    db.execute("BEGIN IMMEDIATE")
    if mode == "old":
        released += db.execute(OLD, (now + 3000, i)).fetchone() is not None
    else:
        row = db.execute(NEW_READ, (i,)).fetchone()
        if row is not None:
            db.execute(NEW_WRITE, (row[0], now + 3000, row[1]))
            released += 1
    db.execute("COMMIT")
assert released == k, (released, k)
# Nothing was handed over: every key unspent, every push forgotten.
assert db.execute("SELECT count(*) FROM messages WHERE sending_since IS NOT NULL OR push_started_at IS NOT NULL "
                  "OR send_started_at IS NOT NULL").fetchone()[0] == 0
