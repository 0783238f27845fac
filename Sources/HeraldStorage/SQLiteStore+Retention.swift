/// What one retention batch deleted.
public struct PruneBatch: Sendable, Hashable {
    /// Messages deleted (each with its key, if it still held it).
    public var messages: Int
    /// Their per-device outcome rows, deleted with them.
    public var outcomes: Int

    public init(messages: Int, outcomes: Int) {
        self.messages = messages
        self.outcomes = outcomes
    }
}

/// A store that deletes finished messages past their retention.
public protocol FinishedMessagePruning: Sendable {
    /// Deletes at most `limit` finished messages whose last change is before
    /// `cutoff` (milliseconds), oldest first, in one write, with their
    /// outcomes and idempotency keys. Fewer than `limit` means none is left.
    func pruneFinished(before cutoff: Int64, limit: Int) async throws -> PruneBatch
}

extension SQLiteStore: FinishedMessagePruning {
    /// Every state but SCHEDULED and HANDED_OFF is finished: no push is owed
    /// (SENT may still become DISPLAYED when the app reports it; past the
    /// retention such a report finds no message). Not pruned although
    /// finished: a message in flight (cannot be: the claim is on a waiting
    /// state, listed for safety) and a CANCELLED one whose revoke push is
    /// still owed. The first term repeats `messages_finished`'s WHERE
    /// verbatim, so SQLite walks that index from its oldest entry.
    static let selectPrunable = """
        SELECT id, bundle_id, idempotency_key FROM messages
        WHERE state NOT IN ('scheduled', 'handed_off') AND updated_at < ?1
          AND sending_since IS NULL
          AND NOT EXISTS (SELECT 1 FROM revokes r WHERE r.message_id = messages.id)
        ORDER BY updated_at LIMIT ?2
        """

    /// Retention: see `FinishedMessagePruning`. The batch goes through the
    /// group-commit writer like any write, so it shares a commit (and its
    /// fsync) with whatever is queued; a small `limit` (≤ 500) keeps the
    /// writer's turn short, so no Schedule waits long behind it.
    ///
    /// Deleting a message that still holds its key frees the key: a later
    /// Schedule with it is a new message. That is the end of the
    /// idempotency promise, which therefore lasts from Schedule until the
    /// retention period after the message's last state change.
    public func pruneFinished(before cutoff: Int64, limit: Int) async throws -> PruneBatch {
        let limit = max(1, limit)
        return try await write { db in
            let select = try db.cached(Self.selectPrunable)
            try select.bind(cutoff, at: 1)
            try select.bind(limit, at: 2)
            var rows: [(id: String, bundleID: String, key: String?)] = []
            while try select.step() {
                rows.append((select.string(0), select.string(1), select.optionalString(2)))
            }
            select.reset()
            var outcomes = 0
            for row in rows {
                try db.run("DELETE FROM outcomes WHERE message_id = ?1") { try $0.bind(row.id, at: 1) }
                outcomes += db.changes
                // A finished push dropped its marks; none should be left.
                try db.run("DELETE FROM handovers WHERE message_id = ?1") { try $0.bind(row.id, at: 1) }
                if let key = row.key {
                    // Only when this message is still the key's live one (a
                    // superseded message's key belongs to its successor).
                    try db.run("DELETE FROM message_keys WHERE bundle_id = ?1 AND idempotency_key = ?2 AND message_id = ?3") {
                        try $0.bind(row.bundleID, at: 1)
                        try $0.bind(key, at: 2)
                        try $0.bind(row.id, at: 3)
                    }
                }
                try db.run("DELETE FROM messages WHERE id = ?1") { try $0.bind(row.id, at: 1) }
            }
            return PruneBatch(messages: rows.count, outcomes: outcomes)
        }
    }
}
