// The policy ledger on SQLite: every reservation is one job of the
// group-commit writer, whose one thread runs the jobs one after another on
// the one write connection, so the read of a user's counted sends and the
// insert that follows it cannot interleave with another reservation's
// (nor can another process's: the data directory lock). The throttle is
// the process's own (`ThrottleBook`).

extension SQLiteStore: PolicyLedger {
    public func reserveCountedSend(_ reservation: CapReservation) async throws -> CapAnswer {
        try await write { db in
            if let at = try Self.countedInstant(bundleID: reservation.bundleID, messageID: reservation.messageID, db) {
                return .reserved(at: at)
            }
            let since = CapArithmetic.saturatingAdd(reservation.now, -reservation.lookBack)
            let rows = try Self.countedRows(bundleID: reservation.bundleID, userID: reservation.userID, since: since, db)
            let answer = CapArithmetic.answer(
                for: reservation, userInstants: rows.map(\.at),
                campaignInstants: rows.filter { $0.campaignID == reservation.campaignID }.map(\.at))
            if case .reserved(let at) = answer {
                try Self.insertCounted(CountedSend(
                    bundleID: reservation.bundleID, userID: reservation.userID, campaignID: reservation.campaignID,
                    messageID: reservation.messageID, at: at), db)
            }
            return answer
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

    static func countedInstant(bundleID: String, messageID: String, _ db: Database) throws -> Int64? {
        let select = try db.cached("SELECT at FROM counted_sends WHERE bundle_id = ?1 AND message_id = ?2")
        defer { select.reset() }
        try select.bind(bundleID, at: 1)
        try select.bind(messageID, at: 2)
        return try select.step() ? select.int64(0) : nil
    }

    /// The user's counted sends after `since`, oldest first (the covering
    /// index `counted_sends_user`).
    static func countedRows(
        bundleID: String, userID: String, since: Int64, _ db: Database
    ) throws -> [(at: Int64, campaignID: String)] {
        let select = try db.cached("""
            SELECT at, campaign_id FROM counted_sends
            WHERE bundle_id = ?1 AND user_id = ?2 AND at > ?3 ORDER BY at
            """)
        defer { select.reset() }
        try select.bind(bundleID, at: 1)
        try select.bind(userID, at: 2)
        try select.bind(since, at: 3)
        var rows: [(at: Int64, campaignID: String)] = []
        while try select.step() { rows.append((select.int64(0), select.string(1))) }
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
