/// Version 15: `messages_policy` no longer follows `state` (issue 26: the
/// release of held messages at the plain dispatch rate).
///
/// v10's partial index held the messages `WHERE deferred_at IS NOT NULL OR
/// state = 'suppressed'`. SQLite maintains a partial index on every UPDATE
/// that assigns a column its WHERE names, so each end of a held message's
/// push (`SQLiteStore.endSQL` sets `state`) deleted and re-inserted its
/// entry: two index seeks per push of a release, ~7 µs of SQLite's CPU
/// each at 20,000 held (`bench/lib/sqlite_held_ends.py`).
///
/// `messages.suppressed_at` (when the message ended SUPPRESSED; NULL
/// otherwise) now stands for the state there. Only the end to SUPPRESSED
/// assigns it (`SQLiteStore.endSuppressedSQL`), so every other end leaves
/// the index alone. Backfilled from the rows already SUPPRESSED (read
/// through the old index, which holds them all), then the index rebuilt.
enum SchemaV15 {
    static let sql = """
        ALTER TABLE messages ADD COLUMN suppressed_at INTEGER;
        UPDATE messages INDEXED BY messages_policy SET suppressed_at = updated_at
            WHERE (deferred_at IS NOT NULL OR state = 'suppressed') AND state = 'suppressed';
        DROP INDEX messages_policy;
        CREATE INDEX messages_policy ON messages(bundle_id, campaign_id, created_at)
            WHERE deferred_at IS NOT NULL OR suppressed_at IS NOT NULL;
        """
}
