import HeraldCore

/// The messages one group-commit transaction inserts, written together:
/// one multi-row INSERT into `messages` per chunk; then, copied from those
/// rows by an INSERT … SELECT each, their first events into `events` and
/// their live keys into `message_keys`; one `state_counts` change per state
/// (issue 14: "group commit writes each batch as one multi-row statement").
///
/// Schedule jobs append here (`Database.insertBatch`, set by the writer for
/// the batch's fast path) instead of inserting one row each. The writer
/// flushes before any job that does not append (so every other write, and
/// its reads, see the rows) and before COMMIT; a Schedule whose (bundle, key)
/// is already in the batch flushes first, so the live-key look-up finds it.
/// A failed flush fails the batch's fast path, and the writer runs every job
/// again, each in its own savepoint, with no batch: rows inserted one by one.
final class MessageInsertBatch {
    private struct Key: Hashable {
        var bundleID: String
        var key: String
    }

    private var messages: [StoredMessage] = []
    private var keys: Set<Key> = []

    /// Whether a message with this (bundle, key) waits in the batch.
    func contains(bundleID: String, key: String) -> Bool {
        !keys.isEmpty && keys.contains(Key(bundleID: bundleID, key: key))
    }

    func append(_ message: StoredMessage) {
        messages.append(message)
        if let key = message.idempotencyKey {
            keys.insert(Key(bundleID: message.bundleID, key: key))
        }
    }

    func removeAll() {
        messages.removeAll(keepingCapacity: true)
        keys.removeAll(keepingCapacity: true)
    }

    /// Writes the batch and empties it (also when it throws: the caller
    /// rolls the transaction back).
    func flush(_ db: Database) throws {
        guard !messages.isEmpty else { return }
        defer { removeAll() }
        // The rows this flush inserts get rowids above the largest one now
        // (SQLite allocates max + 1 for a table without AUTOINCREMENT).
        let above = try Self.largestRowID(db)
        try Self.chunked(messages.count, width: MessageRows.insertWidth, sql: Self.messageSQL, db) { s, offset, row in
            try MessageRows.bind(messages[row], to: s, after: offset)
            try s.bind(MessageFunnel.atInsert(messages[row].state), at: offset + 23)
        }
        // The delivery event log (schema v12): each message's first event,
        // copied from the rows just written by one INSERT … SELECT (no
        // parameter per row: binding the columns again cost more than the
        // copy), in rowid order, which is the batch's order.
        try db.run(Self.eventSQL) { try $0.bind(above, at: 1) }
        guard db.changes == messages.count else {
            throw StoreError.invalidRecord(
                "event log: \(db.changes) events for \(messages.count) inserted messages (rowids not above \(above))")
        }
        // The live keys, copied from the same rows (no key in the batch
        // twice: a repeated one flushed the batch first).
        try db.run(Self.keySQL) { try $0.bind(above, at: 1) }
        let keyed = messages.reduce(0) { $0 + ($1.idempotencyKey == nil ? 0 : 1) }
        guard db.changes == keyed else {
            throw StoreError.invalidRecord("message keys: \(db.changes) written for \(keyed) keyed messages")
        }
        // Nearly always one state (SCHEDULED): counted without a dictionary.
        var state = messages[0].state, n = 0, suppressed = false
        for message in messages {
            suppressed = suppressed || message.state == .suppressed
            if message.state != state {
                try MessageRows.count(db, state, n)
                state = message.state
                n = 0
            }
            n += 1
        }
        try MessageRows.count(db, state, n)
        // Schema v15: a message inserted SUPPRESSED (an import) is in
        // `messages_policy` as one that ended so is.
        if suppressed { try db.run(Self.suppressedSQL) { try $0.bind(above, at: 1) } }
        // Schema v14's campaign counts: one upsert per run of messages that
        // count alike (nearly always the whole batch).
        var key = MessageRows.CampaignCountKey(inserting: messages[0]), alike = 0
        for message in messages {
            let next = MessageRows.CampaignCountKey(inserting: message)
            if next != key {
                try MessageRows.countCampaign(db, key, alike)
                key = next
                alike = 0
            }
            alike += 1
        }
        try MessageRows.countCampaign(db, key, alike)
    }

    /// Chunk sizes, largest first: powers of two, so any count is at most
    /// `count / 64 + 6` statements and seven cached statements.
    private static let sizes = [64, 32, 16, 8, 4, 2, 1]
    private static let messageSQL = sizes.map { MessageRows.insertSQL(rows: $0) }
    private static let eventSQL = """
        INSERT INTO events(bundle_id, at, kind, message_id, idempotency_key, user_id, campaign_id, platform)
        SELECT bundle_id, created_at, state, id, idempotency_key, user_id, campaign_id, platform
        FROM messages WHERE rowid > ?1 ORDER BY rowid
        """

    private static let suppressedSQL = """
        UPDATE messages SET suppressed_at = updated_at WHERE rowid > ?1 AND state = 'suppressed'
        """

    /// The largest rowid in `messages` (0 when empty).
    private static func largestRowID(_ db: Database) throws -> Int64 {
        let statement = try db.cached("SELECT coalesce(max(rowid), 0) FROM messages")
        defer { statement.reset() }
        guard try statement.step() else { return 0 }
        return statement.int64(0)
    }
    /// The keys' upsert (`WHERE` before `ON CONFLICT`: SQLite's rule for
    /// an upsert from a SELECT).
    private static let keySQL = """
        INSERT INTO message_keys(bundle_id, idempotency_key, message_id)
        SELECT bundle_id, idempotency_key, id FROM messages WHERE rowid > ?1 AND idempotency_key IS NOT NULL
        ORDER BY rowid
        ON CONFLICT(bundle_id, idempotency_key) DO UPDATE SET message_id = excluded.message_id
        """

    /// Runs `total` rows through the multi-row statements `sql` (one per
    /// entry of `sizes`), `bind` filling row `row` after parameter `offset`.
    private static func chunked(
        _ total: Int, width: Int32, sql: [String], _ db: Database,
        bind: (Statement, _ offset: Int32, _ row: Int) throws -> Void
    ) throws {
        var row = 0
        for (index, size) in sizes.enumerated() {
            while total - row >= size {
                let statement = try db.cached(sql[index])
                for item in 0..<size {
                    try bind(statement, Int32(item) * width, row + item)
                }
                try statement.run()
                statement.reset()
                row += size
            }
        }
    }
}
