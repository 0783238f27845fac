import HeraldCore
public import HeraldStorage
import Logging
import PostgresNIO

// The policy ledger across replicas. A batch of reservations is one
// transaction that first takes an advisory lock on each (bundle, user)'s
// stable hash, then reads the users' counted sends and inserts its own:
// every replica's reservations for a user are serialized by its lock, and
// each reads after the previous holder committed (READ COMMITTED takes a
// snapshot per statement, after the lock). A lock, not a row: nothing to
// create per user, and two users whose hashes collide only wait for each
// other. The dispatcher's batches try the locks (`pg_try_advisory_xact_lock`):
// a user another replica's batch holds is answered busy and asked again in
// the caller's next batch, instead of the whole batch waiting for that
// transaction's commit; after a bound, it waits (`ReservationBatcher`).
// The throttle is one upsert per grant, serialized by the bundle's row lock.

extension PostgresStore {
    /// The advisory lock of a (bundle, user)'s reservations: the A/B split's
    /// documented hash (`ABSplit.hash`: FNV-1a 64 with a fixed finalizer,
    /// the same in every replica and build; Swift's `Hasher` is seeded per
    /// process).
    static func ledgerLockKey(bundleID: String, userID: String) -> Int64 {
        Int64(bitPattern: ABSplit.hash(bundleID: bundleID, userID: userID))
    }

    /// Every reservation answered: each waits for its user's lock.
    public func reserveCountedSends(_ reservations: [CapReservation]) async throws -> [CapAnswer] {
        try await reserveCountedSends(reservations, waitingIfBusy: Array(repeating: true, count: reservations.count)).map {
            guard let answer = $0 else { throw StoreError.database("a reservation that waits for its lock answered busy") }
            return answer
        }
    }

    /// One transaction for the whole batch: the batch users' advisory locks
    /// in key order (as every batch takes them: two batches never wait for
    /// each other in a cycle; a deadlock would be retried), each taken with
    /// `pg_try_advisory_xact_lock` unless one of its reservations waits —
    /// a user another replica is reserving for is busy, answered nil, not
    /// waited for; then one read of the granted messages' own rows and
    /// their users' counted sends, the answers (`CapArithmetic`, in batch
    /// order), one insert of the reservations.
    public func reserveCountedSends(_ reservations: [CapReservation], waitingIfBusy: [Bool]) async throws -> [CapAnswer?] {
        guard !reservations.isEmpty else { return [] }
        precondition(waitingIfBusy.count == reservations.count, "one waitingIfBusy flag per reservation")
        let keyOf = reservations.map { Self.ledgerLockKey(bundleID: $0.bundleID, userID: $0.userID) }
        var waits: [Int64: Bool] = [:]
        for (key, wait) in zip(keyOf, waitingIfBusy) { waits[key] = (waits[key] ?? false) || wait }
        let keys = waits.keys.sorted(), keyWaits = keys.map { waits[$0] ?? true }
        return try await transaction { connection in
            // Busy keys: those another transaction holds (a waiting key is
            // never busy: it returns once taken). In the array's order.
            let busy = Set(try await Self.rows(connection, """
                SELECT k FROM unnest(\(keys)::bigint[], \(keyWaits)::bool[]) AS q(k, w)
                WHERE NOT CASE WHEN w THEN pg_advisory_xact_lock(k) IS NOT NULL ELSE pg_try_advisory_xact_lock(k) END
                """, logger: self.logger) { try $0.decode(Int64.self) })
            let granted = reservations.indices.filter { !busy.contains(keyOf[$0]) }
            guard !granted.isEmpty else { return Array(repeating: nil, count: reservations.count) }
            let batch = granted.map { reservations[$0] }
            let users = CapArithmetic.lookBacks(of: batch)
            // After the locks: READ COMMITTED reads what the previous holders
            // committed. One index lookup per message (the primary key) and
            // per user (`counted_sends_user`): LATERAL … OFFSET 0 keeps each a
            // lookup, where a join would hash a scan of the whole table.
            let counted = try await Self.rows(connection, """
                SELECT c.* FROM unnest(\(batch.map(\.bundleID))::text[], \(batch.map(\.messageID))::text[]) AS q(b, m),
                LATERAL (SELECT c.bundle_id, c.user_id, c.campaign_id, c.message_id, c.at FROM counted_sends c
                         WHERE c.bundle_id = q.b AND c.message_id = q.m OFFSET 0) AS c
                UNION ALL
                SELECT c.* FROM unnest(\(users.map(\.bundleID))::text[], \(users.map(\.userID))::text[],
                                       \(users.map(\.since))::bigint[]) AS q(b, u, s),
                LATERAL (SELECT c.bundle_id, c.user_id, c.campaign_id, c.message_id, c.at FROM counted_sends c
                         WHERE c.bundle_id = q.b AND c.user_id = q.u AND c.at > q.s OFFSET 0) AS c
                """, logger: self.logger) { row in
                let (bundleID, userID, campaignID, messageID, at) = try row.decode((String, String, String, String, Int64).self)
                return CountedSend(bundleID: bundleID, userID: userID, campaignID: campaignID, messageID: messageID, at: at)
            }
            let (answers, inserts) = CapArithmetic.answer(batch: batch, counted: counted)
            if !inserts.isEmpty {
                _ = try await Self.run(connection, """
                    INSERT INTO counted_sends(bundle_id, message_id, user_id, campaign_id, at)
                    SELECT * FROM unnest(\(inserts.map(\.bundleID))::text[], \(inserts.map(\.messageID))::text[],
                                         \(inserts.map(\.userID))::text[], \(inserts.map(\.campaignID))::text[],
                                         \(inserts.map(\.at))::bigint[])
                    ON CONFLICT (bundle_id, message_id) DO NOTHING RETURNING 1
                    """, logger: self.logger)
            }
            var all = [CapAnswer?](repeating: nil, count: reservations.count)
            for (index, answer) in zip(granted, answers) { all[index] = answer }
            return all
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
