import HeraldCore
public import HeraldStorage
import HeraldPrimitives
import PostgresNIO

// The delivery event log on PostgreSQL (schema v9): triggers append; this
// file reads it on the read pool, appends `device_removed`, and trims it.
// Every read returns only events of transactions older than every one
// still running (see `PostgresSchemaV9`), ordered by (txid, seq).

extension PostgresStore: DeliveryEventLog, EventLogPruning {
    /// The visibility rule: a row is returned only once no transaction that
    /// could sort before it is still running.
    static let settled = "txid < pg_snapshot_xmin(pg_current_snapshot())"

    public func events(bundleID: String, after cursor: EventCursor?, filter: EventFilter, limit: Int) async throws -> EventPage {
        guard limit > 0 else { return EventPage(events: [], reached: nil) }
        let limit = min(limit, 10_000)
        let scan = filter.campaignID == nil && filter.kinds.isEmpty ? limit : limit * EventRows.scanFactor
        let major = String(cursor?.major ?? 0), minor = cursor?.minor ?? 0
        return try await connection(on: .reads) { connection in
            var events: [DeliveryEvent] = []
            var reached: EventCursor?
            for try await row in try await connection.query("""
                SELECT txid::text::bigint, seq, \(unescaped: EventRows.columns) FROM events
                WHERE bundle_id = \(bundleID) AND (txid, seq) > (\(major)::xid8, \(minor)) AND \(unescaped: Self.settled)
                ORDER BY txid, seq LIMIT \(scan)
                """, logger: self.logger) {
                // Past `limit` matches the rest is read but not looked at:
                // `reached` stays at the last one returned.
                guard events.count < limit else { continue }
                let event = try Self.event(row)
                reached = event.cursor
                if filter.matches(event) { events.append(event) }
            }
            return EventPage(events: events, reached: reached)
        }
    }

    static func event(_ row: PostgresRow) throws -> DeliveryEvent {
        let r = row.makeRandomAccess()
        return try EventRows.event(
            cursor: EventCursor(major: try r[0].decode(Int64.self), minor: try r[1].decode(Int64.self)),
            at: try r[2].decode(Int64.self), kind: try r[3].decode(String.self), bundleID: try r[4].decode(String.self),
            messageID: try r[5].decode(String.self), idempotencyKey: try r[6].decode(String?.self),
            userID: try r[7].decode(String.self), campaignID: try r[8].decode(String.self),
            platform: try r[9].decode(String.self), deviceToken: try r[10].decode(String?.self),
            reason: try r[11].decode(String?.self), httpStatus: try r[12].decode(Int32?.self).map(Int.init))
    }

    public func latestEventCursor(bundleID: String) async throws -> EventCursor? {
        try await connection(on: .reads) { connection in
            try await Self.first(connection, """
                SELECT txid::text::bigint, seq FROM events WHERE bundle_id = \(bundleID) AND \(unescaped: Self.settled)
                ORDER BY txid DESC, seq DESC LIMIT 1
                """, logger: self.logger) { row in
                let (major, minor) = try row.decode((Int64, Int64).self)
                return EventCursor(major: major, minor: minor)
            }
        }
    }

    public func prunedEventCursor(bundleID: String) async throws -> EventCursor? {
        try await connection(on: .reads) { connection in
            try await Self.first(connection, """
                SELECT pruned_major, pruned_minor FROM event_horizon WHERE bundle_id = \(bundleID)
                """, logger: self.logger) { row in
                let (major, minor) = try row.decode((Int64, Int64).self)
                return EventCursor(major: major, minor: minor)
            }
        }
    }

    /// Whether every committed event is readable now: false while a
    /// transaction older than the newest committed event is still running
    /// (anywhere in the cluster: the snapshot's xmin is the cluster's), so
    /// that event waits for it. Tests wait on it after their writes.
    func eventLogSettled() async throws -> Bool {
        try await connection(on: .reads) { connection in
            try await Self.first(connection, """
                SELECT coalesce((SELECT max(txid) FROM events) < pg_snapshot_xmin(pg_current_snapshot()), true)
                """, logger: self.logger) { try $0.decode(Bool.self) } ?? true
        }
    }

    /// `removeDevice`'s event (SQLite's `appendDeviceRemoved`), in its
    /// transaction.
    static func appendDeviceRemoved(
        _ connection: PostgresConnection, bundleID: String, deviceToken: String, userID: String, platform: String, at: Int64,
        logger: Logger
    ) async throws {
        try await connection.query("""
            INSERT INTO events(bundle_id, at, kind, message_id, idempotency_key, user_id, campaign_id, platform, device_token)
            VALUES (\(bundleID), \(at), 'device_removed', '', NULL, \(userID), '', \(platform), \(deviceToken))
            """, logger: logger)
    }

    /// See `EventLogPruning`: the oldest settled events (`events_order`),
    /// up to the first one not older than `cutoff`, in one transaction;
    /// each touched bundle's watermark only moves forward (replicas may
    /// prune at once).
    public func pruneEvents(before cutoff: Int64, limit: Int) async throws -> Int {
        let limit = max(1, limit)
        return try await transaction { connection in
            let oldest = try await Self.rows(connection, """
                SELECT txid::text::bigint, seq, bundle_id, at FROM events WHERE \(unescaped: Self.settled)
                ORDER BY txid, seq LIMIT \(limit)
                """, logger: self.logger) { try $0.decode((Int64, Int64, String, Int64).self) }
            let doomed = oldest.prefix { $0.3 < cutoff }
            guard let last = doomed.last else { return 0 }
            var horizon: [String: EventCursor] = [:]
            for row in doomed { horizon[row.2] = EventCursor(major: row.0, minor: row.1) }
            try await connection.query("""
                DELETE FROM events WHERE (txid, seq) <= (\(String(last.0))::xid8, \(last.1))
                """, logger: self.logger)
            let bundles = Array(horizon.keys)
            try await connection.query("""
                INSERT INTO event_horizon(bundle_id, pruned_major, pruned_minor)
                SELECT * FROM unnest(\(bundles)::text[], \(bundles.map { horizon[$0]!.major })::bigint[],
                                     \(bundles.map { horizon[$0]!.minor })::bigint[])
                ON CONFLICT (bundle_id) DO UPDATE SET pruned_major = excluded.pruned_major, pruned_minor = excluded.pruned_minor
                WHERE (event_horizon.pruned_major, event_horizon.pruned_minor) < (excluded.pruned_major, excluded.pruned_minor)
                """, logger: self.logger)
            return doomed.count
        }
    }
}
