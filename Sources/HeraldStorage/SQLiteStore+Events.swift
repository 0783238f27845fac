import HeraldCore

// The delivery event log on SQLite (schema v12): the triggers append; this
// file reads it (on the read-side threads, like GetMessage), appends the
// one event no trigger can (`device_removed`), and trims it.

extension SQLiteStore: DeliveryEventLog, EventLogPruning {
    /// One bundle's events after ?2, in order, at most ?3 (a walk of
    /// `events_bundle`).
    static let eventsAfter = """
        SELECT seq, \(EventRows.columns) FROM events
        WHERE bundle_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3
        """

    public func events(bundleID: String, after cursor: EventCursor?, filter: EventFilter, limit: Int) async throws -> EventPage {
        guard limit > 0 else { return EventPage(events: [], reached: nil) }
        let limit = min(limit, 10_000)
        let scan = filter.campaignID == nil && filter.kinds.isEmpty ? limit : limit * EventRows.scanFactor
        return try await readSide.read { db in
            let statement = try db.cached(Self.eventsAfter)
            try statement.bind(bundleID, at: 1)
            try statement.bind(cursor?.major ?? 0, at: 2)
            try statement.bind(scan, at: 3)
            var events: [DeliveryEvent] = []
            var reached: EventCursor?
            while try statement.step() {
                let event = try EventRows.event(
                    cursor: EventCursor(major: statement.int64(0)), at: statement.int64(1), kind: statement.string(2),
                    bundleID: statement.string(3), messageID: statement.string(4),
                    idempotencyKey: statement.optionalString(5), userID: statement.string(6),
                    campaignID: statement.string(7), platform: statement.string(8),
                    deviceToken: statement.optionalString(9), reason: statement.optionalString(10),
                    httpStatus: statement.optionalInt64(11).map(Int.init))
                reached = event.cursor
                if filter.matches(event) {
                    events.append(event)
                    if events.count == limit { break }
                }
            }
            statement.reset()
            return EventPage(events: events, reached: reached)
        }
    }

    public func latestEventCursor(bundleID: String) async throws -> EventCursor? {
        try await readSide.read { db in
            let statement = try db.cached("SELECT max(seq) FROM events WHERE bundle_id = ?1")
            try statement.bind(bundleID, at: 1)
            defer { statement.reset() }
            guard try statement.step(), let seq = statement.optionalInt64(0) else { return nil }
            return EventCursor(major: seq)
        }
    }

    public func prunedEventCursor(bundleID: String) async throws -> EventCursor? {
        try await readSide.read { db in
            let statement = try db.cached("SELECT pruned_major, pruned_minor FROM event_horizon WHERE bundle_id = ?1")
            try statement.bind(bundleID, at: 1)
            defer { statement.reset() }
            guard try statement.step() else { return nil }
            return EventCursor(major: statement.int64(0), minor: statement.int64(1))
        }
    }

    /// `removeDevice`'s event: the device's bundle, token, user and
    /// platform (the store does not know which push found it: the message
    /// fields are empty).
    static func appendDeviceRemoved(
        _ db: Database, bundleID: String, deviceToken: String, userID: String, platform: String, at: Int64
    ) throws {
        try db.run("""
            INSERT INTO events(bundle_id, at, kind, message_id, idempotency_key, user_id, campaign_id, platform, device_token)
            VALUES (?1, ?2, 'device_removed', '', NULL, ?3, '', ?4, ?5)
            """) {
            try $0.bind(bundleID, at: 1)
            try $0.bind(at, at: 2)
            try $0.bind(userID, at: 3)
            try $0.bind(platform, at: 4)
            try $0.bind(deviceToken, at: 5)
        }
    }

    /// See `EventLogPruning`. The newest event is never deleted, so `seq`
    /// (the rowid, no AUTOINCREMENT) is never handed out twice.
    public func pruneEvents(before cutoff: Int64, limit: Int) async throws -> Int {
        let limit = max(1, limit)
        return try await write { db in
            let select = try db.cached("""
                SELECT seq, bundle_id, at FROM events
                WHERE seq < (SELECT max(seq) FROM events) ORDER BY seq LIMIT ?1
                """)
            try select.bind(limit, at: 1)
            var last: Int64?
            var count = 0
            var horizon: [String: Int64] = [:]
            while try select.step() {
                guard select.int64(2) < cutoff else { break }
                let seq = select.int64(0)
                last = seq
                count += 1
                horizon[select.string(1)] = seq
            }
            select.reset()
            guard let last else { return 0 }
            try db.run("DELETE FROM events WHERE seq <= ?1") { try $0.bind(last, at: 1) }
            for (bundleID, seq) in horizon {
                try db.run("""
                    INSERT INTO event_horizon(bundle_id, pruned_major, pruned_minor) VALUES (?1, ?2, 0)
                    ON CONFLICT(bundle_id) DO UPDATE SET pruned_major = max(pruned_major, excluded.pruned_major)
                    """) {
                    try $0.bind(bundleID, at: 1)
                    try $0.bind(seq, at: 2)
                }
            }
            return count
        }
    }
}
