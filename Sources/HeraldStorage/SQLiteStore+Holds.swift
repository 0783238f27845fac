public import HeraldCore

extension SQLiteStore {
    /// The claim given back as `MessageRows.release` does, the due time
    /// moved and the message marked deferred (schema v9), while it is still
    /// claimed in state ?2. Whether it applied is `Database.changes`: a
    /// RETURNING clause would cost an ephemeral table (`MessageRows.claim`).
    static let holdUpdate = """
        UPDATE messages
        SET \(MessageRows.releasing(touched: MessageRows.pushTouched)),
            due_at = ?3, deferred_at = coalesce(deferred_at, ?4), updated_at = ?4
        WHERE id = ?1 AND state = ?2 AND sending_since IS NOT NULL
        """

    private static let holdStatement = HotSQL(holdUpdate)

    /// See `HeraldStore.hold`. The final outcomes go in first, so the
    /// release sees them (the push stays open); the WAITING ones only when
    /// the hold applied. Hand-over marks are kept: the push is still open.
    public func hold(id: String, from: MessageState, now: Int64, recording outcomes: [DeviceOutcome]) async throws -> Bool {
        let hold = try DeviceHold(id: id, outcomes: outcomes)
        return try await write { db in
            for outcome in hold.final { try Self.insert(outcome, into: db) }
            try db.run(Self.holdStatement) {
                try $0.bind(id, at: 1)
                try $0.bind(from.rawValue, at: 2)
                try $0.bind(hold.dueAt, at: 3)
                try $0.bind(now, at: 4)
            }
            guard db.changes > 0 else { return false }
            for outcome in hold.waiting { try Self.insert(outcome, into: db) }
            return true
        }
    }
}
