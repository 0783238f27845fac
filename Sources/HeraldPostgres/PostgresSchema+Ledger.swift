extension PostgresSchema {
    /// Version 6: the policy ledger and the throttle (issue 26, SPEC §4b;
    /// SQLite's v9 holds the ledger only, its throttle being in memory).
    /// - `counted_sends`: one row per message counted against its user's
    ///   caps, keyed by message (a retried push never counts twice); read by
    ///   (bundle, user) over the longest cap period (`counted_sends_user`,
    ///   covering), pruned by instant (`counted_sends_at`). No foreign key:
    ///   message retention and cap periods are independent. Reservations of
    ///   one (bundle, user) are serialized by a transaction-scoped advisory
    ///   lock, not by a row (`PostgresStore+Ledger.swift`).
    /// - `throttle_slots`: each bundle's next free send slot (µs) and the
    ///   last grant, which the grant's upsert returns. Only non-indexed
    ///   columns change, with room on the page: every grant is a HOT update.
    ///
    /// `IF NOT EXISTS`: tests that take a database back to an older version
    /// re-run this step over the tables it made.
    static let v6 = """
        CREATE TABLE IF NOT EXISTS counted_sends (
            bundle_id   text   NOT NULL,
            message_id  text   COLLATE "C" NOT NULL,
            user_id     text   NOT NULL,
            campaign_id text   NOT NULL,
            at          bigint NOT NULL,
            PRIMARY KEY (bundle_id, message_id)
        );
        CREATE INDEX IF NOT EXISTS counted_sends_user ON counted_sends (bundle_id, user_id, at) INCLUDE (campaign_id);
        CREATE INDEX IF NOT EXISTS counted_sends_at ON counted_sends (at);
        CREATE TABLE IF NOT EXISTS throttle_slots (
            bundle_id        text   PRIMARY KEY,
            next_free_us     bigint NOT NULL,
            granted_start_us bigint NOT NULL,
            granted          bigint NOT NULL
        ) WITH (fillfactor = 50);
        """
}
