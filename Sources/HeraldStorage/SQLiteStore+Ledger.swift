// The policy ledger on SQLite: every batch of reservations is one job of
// the group-commit writer, whose one thread runs the jobs one after another
// on the one write connection, so the read of a user's counted sends and
// the insert that follows it cannot interleave with another batch's (nor
// with another process's: the data directory lock). The throttle is
// the process's own (`ThrottleBook`).

extension SQLiteStore: PolicyLedger {
    public func reserveCountedSends(_ reservations: [CapReservation]) async throws -> [CapAnswer] {
        guard !reservations.isEmpty else { return [] }
        return try await write { db in
            var counted: [CountedSend] = []
            for r in reservations {
                if let send = try Self.countedRow(bundleID: r.bundleID, messageID: r.messageID, db) { counted.append(send) }
            }
            for user in CapArithmetic.lookBacks(of: reservations) {
                counted += try Self.countedRows(bundleID: user.bundleID, userID: user.userID, since: user.since, db)
            }
            let (answers, inserts) = CapArithmetic.answer(batch: reservations, counted: counted)
            for send in inserts { try Self.insertCounted(send, db) }
            return answers
        }
    }

    @discardableResult
    public func recordCountedSend(_ send: CountedSend) async throws -> Bool {
        try await write { db in
            try Self.insertCounted(send, db)
            return db.changes > 0
        }
    }

    @discardableResult
    public func releaseCountedSend(bundleID: String, messageID: String) async throws -> Bool {
        try await write { db in
            try db.run("DELETE FROM counted_sends WHERE bundle_id = ?1 AND message_id = ?2") {
                try $0.bind(bundleID, at: 1)
                try $0.bind(messageID, at: 2)
            }
            return db.changes > 0
        }
    }

    public func countedSends(bundleID: String, userID: String, campaignID: String?, since: Int64) async throws -> [Int64] {
        try read { db in
            try Self.countedRows(bundleID: bundleID, userID: userID, since: since, db)
                .filter { campaignID == nil || $0.campaignID == campaignID }.map(\.at)
        }
    }

    /// One write through the group-commit writer, like a retention batch
    /// of messages: keep `limit` small so no Schedule waits long behind it.
    public func pruneCountedSends(before cutoff: Int64, limit: Int) async throws -> Int {
        let limit = max(1, limit)
        return try await write { db in
            try db.run("""
                DELETE FROM counted_sends WHERE (bundle_id, message_id) IN (
                    SELECT bundle_id, message_id FROM counted_sends WHERE at < ?1 ORDER BY at LIMIT ?2)
                """) {
                try $0.bind(cutoff, at: 1)
                try $0.bind(limit, at: 2)
            }
            return db.changes
        }
    }

    public func takeThrottleSlots(bundleID: String, ratePerSecond: Int, count: Int, now: Int64) async throws -> ThrottleGrant {
        guard !writer.isClosing else { throw StoreError.closed }
        return throttle.take(bundleID: bundleID, ratePerSecond: ratePerSecond, count: count, now: now)
    }

    @discardableResult
    public func returnThrottleSlots(bundleID: String, grant: ThrottleGrant, unused: Int) async throws -> Bool {
        guard !writer.isClosing else { throw StoreError.closed }
        return throttle.giveBack(bundleID: bundleID, grant: grant, unused: unused)
    }

    // MARK: Statements

    /// The message's counted send, if it was counted.
    static func countedRow(bundleID: String, messageID: String, _ db: Database) throws -> CountedSend? {
        let select = try db.cached("SELECT at, user_id, campaign_id FROM counted_sends WHERE bundle_id = ?1 AND message_id = ?2")
        defer { select.reset() }
        try select.bind(bundleID, at: 1)
        try select.bind(messageID, at: 2)
        guard try select.step() else { return nil }
        return CountedSend(bundleID: bundleID, userID: select.string(1), campaignID: select.string(2), messageID: messageID,
                           at: select.int64(0))
    }

    /// The user's counted sends after `since`, oldest first (the covering
    /// index `counted_sends_user`). A message counted twice cannot be: its
    /// own instant, for a message of this user, is one of these rows.
    static func countedRows(bundleID: String, userID: String, since: Int64, _ db: Database) throws -> [CountedSend] {
        let select = try db.cached("""
            SELECT at, campaign_id, message_id FROM counted_sends
            WHERE bundle_id = ?1 AND user_id = ?2 AND at > ?3 ORDER BY at
            """)
        defer { select.reset() }
        try select.bind(bundleID, at: 1)
        try select.bind(userID, at: 2)
        try select.bind(since, at: 3)
        var rows: [CountedSend] = []
        while try select.step() {
            rows.append(CountedSend(bundleID: bundleID, userID: userID, campaignID: select.string(1), messageID: select.string(2),
                                    at: select.int64(0)))
        }
        return rows
    }

    /// Counts `send` unless its message is counted already.
    static func insertCounted(_ send: CountedSend, _ db: Database) throws {
        let insert = try db.cached("""
            INSERT INTO counted_sends(bundle_id, message_id, user_id, campaign_id, at) VALUES (?1, ?2, ?3, ?4, ?5)
            ON CONFLICT(bundle_id, message_id) DO NOTHING
            """)
        defer { insert.reset() }
        try insert.bind(send.bundleID, at: 1)
        try insert.bind(send.messageID, at: 2)
        try insert.bind(send.userID, at: 3)
        try insert.bind(send.campaignID, at: 4)
        try insert.bind(send.at, at: 5)
        try insert.run()
    }
}
