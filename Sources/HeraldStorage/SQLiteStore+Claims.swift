import HeraldCore

// The dispatcher's batched writes: one claim per popped due batch, and many
// pushes' ends in one write job (one job on the writer thread, one caller
// resumed, instead of one of each per message).

extension SQLiteStore {
    /// One write job: `MessageRows.claim` per id, from either waiting state.
    public func claim(ids: [String], now: Int64) async throws -> [StoredMessage] {
        guard !ids.isEmpty else { return [] }
        return try await write { db in
            var claimed: [StoredMessage] = []
            claimed.reserveCapacity(ids.count)
            for id in ids {
                if let message = try MessageRows.claim(db, id: id, from: nil, now: now) { claimed.append(message) }
            }
            return claimed
        }
    }

    /// One write job for every item (checked first: an illegal change
    /// writes nothing).
    public func transitions(_ items: [Transition]) async throws -> [Bool] {
        guard !items.isEmpty else { return [] }
        for item in items { try MessageRows.check(id: item.id, from: item.from, to: item.to) }
        return try await write { db in try items.map { try Self.apply($0, in: db) } }
    }

    /// A checked transition's writes (`transition(id:…)`): the devices'
    /// outcomes, the push's hand-over marks dropped, the compare-and-set of
    /// the state. Returns whether the state changed.
    static func apply(_ item: Transition, in db: Database) throws -> Bool {
        for outcome in item.outcomes { try insert(outcome, into: db, subject: item.subject) }
        // The push ends: its marks served their purpose (the outcomes are
        // recorded), so the table holds only pushes under way.
        try db.run(forgetMarks) { try $0.bind(item.id, at: 1) }
        try db.run(item.to == .suppressed ? endSuppressed : end) {
            try $0.bind(item.id, at: 1)
            try $0.bind(item.from.rawValue, at: 2)
            try $0.bind(item.to.rawValue, at: 3)
            try $0.bind(item.dueAt, at: 4)
            try $0.bind(item.providerMessageID, at: 5)
            try $0.bind(item.lastError, at: 6)
            try $0.bind(item.now, at: 7)
        }
        return db.changes > 0
    }

    /// The compare-and-set of a transition: state, milestones and funnel in
    /// one write of the row (`SchemaV13`'s trigger then has nothing to fix).
    /// Built once; `Database.cached` keys on the text. It does not assign
    /// `suppressed_at`, so it leaves `messages_policy` (schema v15) alone.
    static let endSQL = endSQL(suppressedAt: "")

    private static let end = HotSQL(endSQL)

    private static let endSuppressed = HotSQL(endSuppressedSQL)

    private static let forgetMarks = HotSQL("DELETE FROM handovers WHERE message_id = ?1")

    /// `endSQL` for the end to SUPPRESSED: also `suppressed_at`, which puts
    /// the message in `messages_policy`.
    static let endSuppressedSQL = endSQL(suppressedAt: "suppressed_at = ?7, ")

    private static func endSQL(suppressedAt: String) -> String {
        """
        UPDATE messages
        SET \(suppressedAt)state = ?3, due_at = coalesce(?4, due_at), provider_message_id = coalesce(?5, provider_message_id),
            last_error = coalesce(?6, last_error), sending_since = NULL, push_started_at = NULL, updated_at = ?7,
            \(MessageMilestones.onTransition),
            funnel = \(MessageFunnel.afterTransition)
        WHERE id = ?1 AND state = ?2
        """
    }
}
