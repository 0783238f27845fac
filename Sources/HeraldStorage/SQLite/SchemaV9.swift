/// Version 9: the policy ledger (issue 26, SPEC §4b "Frequency caps"): one
/// row per message counted against its user's caps, keyed by message so a
/// retried push never counts twice. Read by (bundle, user) over the longest
/// cap period (`counted_sends_user`, covering: the campaign is in it);
/// pruned by instant (`counted_sends_at`). No foreign key to `messages`:
/// message retention and cap periods are independent. The throttle has no
/// table here: one process owns an SQLite store (`DataDirectoryLock`), so
/// its schedule lives in memory (`ThrottleBook`).
///
/// `IF NOT EXISTS`: tests that take a database back to an older version
/// re-run this step over the tables it made.
enum SchemaV9 {
    static let sql = """
        CREATE TABLE IF NOT EXISTS counted_sends (
            bundle_id   TEXT    NOT NULL,
            message_id  TEXT    NOT NULL,
            user_id     TEXT    NOT NULL,
            campaign_id TEXT    NOT NULL,
            at          INTEGER NOT NULL,
            PRIMARY KEY (bundle_id, message_id)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS counted_sends_user ON counted_sends (bundle_id, user_id, at, campaign_id);
        CREATE INDEX IF NOT EXISTS counted_sends_at ON counted_sends (at);
        """
}
