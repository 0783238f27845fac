import HeraldCore
public import HeraldStorage
import Logging
import PostgresNIO

// The policy ledger across replicas. A reservation is one transaction that
// first takes `pg_advisory_xact_lock` on the (bundle, user)'s stable hash,
// then reads the user's counted sends and inserts its own: every replica's
// reservations for that user queue on the lock, and each reads after the
// previous one committed (READ COMMITTED takes a snapshot per statement,
// after the lock). A lock, not a row: nothing to create per user, and two
// users whose hashes collide only wait for each other. The throttle is one
// upsert per grant, serialized by the bundle's row lock.

extension PostgresStore {
    /// The advisory lock of a (bundle, user)'s reservations: the A/B split's
    /// documented hash (`ABSplit.hash`: FNV-1a 64 with a fixed finalizer,
    /// the same in every replica and build; Swift's `Hasher` is seeded per
    /// process).
    static func ledgerLockKey(bundleID: String, userID: String) -> Int64 {
        Int64(bitPattern: ABSplit.hash(bundleID: bundleID, userID: userID))
    }

    public func reserveCountedSend(_ reservation: CapReservation) async throws -> CapAnswer {
        let r = reservation
        let since = CapArithmetic.saturatingAdd(r.now, -r.lookBack)
        return try await transaction { connection in
            _ = try await Self.run(connection, """
                SELECT pg_advisory_xact_lock(\(Self.ledgerLockKey(bundleID: r.bundleID, userID: r.userID)))
                """, logger: self.logger)
            // The message's own row first (counted already: that instant),
            // then the user's counted sends in the look-back.
            let rows = try await Self.rows(connection, """
                SELECT at, campaign_id, true FROM counted_sends WHERE bundle_id = \(r.bundleID) AND message_id = \(r.messageID)
                UNION ALL
                SELECT at, campaign_id, false FROM counted_sends
                WHERE bundle_id = \(r.bundleID) AND user_id = \(r.userID) AND at > \(since)
                """, logger: self.logger) { try $0.decode((Int64, String, Bool).self) }
            if let mine = rows.first(where: \.2) { return .reserved(at: mine.0) }
            let answer = CapArithmetic.answer(
                for: r, userInstants: rows.map(\.0), campaignInstants: rows.filter { $0.1 == r.campaignID }.map(\.0))
            if case .reserved(let at) = answer {
                _ = try await Self.insertCounted(connection, CountedSend(
                    bundleID: r.bundleID, userID: r.userID, campaignID: r.campaignID, messageID: r.messageID, at: at),
                    logger: self.logger)
            }
            return answer
        }
    }

    @discardableResult
    public func recordCountedSend(_ send: CountedSend) async throws -> Bool {
        try await autocommit { connection in try await Self.insertCounted(connection, send, logger: self.logger) > 0 }
    }

    @discardableResult
    public func releaseCountedSend(bundleID: String, messageID: String) async throws -> Bool {
        try await autocommit { connection in
            try await Self.run(connection, """
                DELETE FROM counted_sends WHERE bundle_id = \(bundleID) AND message_id = \(messageID) RETURNING 1
                """, logger: self.logger) > 0
        }
    }

    public func countedSends(bundleID: String, userID: String, campaignID: String?, since: Int64) async throws -> [Int64] {
        try await connection { connection in
            try await Self.rows(connection, """
                SELECT at FROM counted_sends
                WHERE bundle_id = \(bundleID) AND user_id = \(userID) AND at > \(since)
                  AND (\(campaignID == nil) OR campaign_id = \(campaignID ?? ""))
                ORDER BY at
                """, logger: self.logger) { try $0.decode(Int64.self) }
        }
    }

    public func pruneCountedSends(before cutoff: Int64, limit: Int) async throws -> Int {
        try await autocommit { connection in
            try await Self.run(connection, """
                DELETE FROM counted_sends WHERE (bundle_id, message_id) IN (
                    SELECT bundle_id, message_id FROM counted_sends WHERE at < \(cutoff) ORDER BY at LIMIT \(max(1, limit)))
                RETURNING 1
                """, logger: self.logger)
        }
    }

    /// One upsert: a bundle's first grant inserts its row (computed here by
    /// `ThrottleSchedule`); later ones update it with the same arithmetic
    /// in SQL, on the row's latest version under its lock, and return the
    /// grant from the row (`granted_start_us`, `granted`).
    public func takeThrottleSlots(bundleID: String, ratePerSecond: Int, count: Int, now: Int64) async throws -> ThrottleGrant {
        let nowMicros = ThrottleSchedule.micros(now)
        let (fresh, freshNext) = ThrottleSchedule.grant(
            nextFree: nil, nowMicros: nowMicros, ratePerSecond: ratePerSecond, count: count)
        guard count > 0 else { return fresh }
        let spacing = fresh.spacingMicros
        let horizon = ThrottleSchedule.horizonMicros, lead = ThrottleSchedule.maximumLeadMicros
        let booked = try await autocommit { connection in
            try await Self.first(connection, """
                INSERT INTO throttle_slots AS t (bundle_id, next_free_us, granted_start_us, granted)
                VALUES (\(bundleID), \(freshNext), \(fresh.startMicros), \(Int64(fresh.count)))
                ON CONFLICT (bundle_id) DO UPDATE SET (granted_start_us, granted, next_free_us) = (
                    SELECT g.s, g.n, CASE WHEN g.n > 0 THEN g.s + g.n * \(spacing) ELSE t.next_free_us END
                    FROM (SELECT b.s, least(\(Int64(count)), greatest(0, (\(nowMicros) + \(horizon) - b.s + \(spacing) - 1) / \(spacing))) AS n
                          FROM (SELECT CASE WHEN t.next_free_us < \(nowMicros) OR t.next_free_us > \(nowMicros) + \(lead)
                                            THEN \(nowMicros) ELSE t.next_free_us END AS s) AS b) AS g)
                RETURNING granted_start_us, granted
                """, logger: self.logger) { try $0.decode((Int64, Int64).self) }
        }
        guard let booked else { throw StoreError.database("the throttle's upsert returned no row") }
        return ThrottleGrant(startMicros: booked.0, spacingMicros: spacing, count: Int(booked.1))
    }

    /// One compare-and-set on the bundle's next free slot.
    @discardableResult
    public func returnThrottleSlots(bundleID: String, grant: ThrottleGrant, unused: Int) async throws -> Bool {
        let unused = min(unused, grant.count)
        guard unused > 0 else { return false }
        return try await autocommit { connection in
            try await Self.run(connection, """
                UPDATE throttle_slots SET next_free_us = \(grant.endMicros - Int64(unused) * grant.spacingMicros)
                WHERE bundle_id = \(bundleID) AND next_free_us = \(grant.endMicros) RETURNING 1
                """, logger: self.logger) > 0
        }
    }

    /// Counts `send` unless its message is counted already; 1 when it was inserted.
    private static func insertCounted(_ connection: PostgresConnection, _ send: CountedSend, logger: Logger) async throws -> Int {
        try await run(connection, """
            INSERT INTO counted_sends(bundle_id, message_id, user_id, campaign_id, at)
            VALUES (\(send.bundleID), \(send.messageID), \(send.userID), \(send.campaignID), \(send.at))
            ON CONFLICT (bundle_id, message_id) DO NOTHING RETURNING 1
            """, logger: logger)
    }
}
