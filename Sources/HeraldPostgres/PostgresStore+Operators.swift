public import HeraldCore
public import HeraldStorage
import PostgresNIO

extension PostgresStore {

    /// Number of messages in each state, cheap on a large table (no counter
    /// rows: those would be hot rows updated by every message):
    /// - while the table holds fewer than `configuration.exactCountRows`
    ///   rows (the planner's `pg_class.reltuples`), every state is counted
    ///   exactly;
    /// - past that, SCHEDULED and HANDED_OFF are counted exactly from the
    ///   partial indexes `messages_active_unclaimed` and `messages_leases`
    ///   (their size follows the backlog and what is being sent, not the
    ///   history), and every finished state is an *estimate*: the row
    ///   estimate times the state's frequency in the planner's statistics
    ///   (`pg_stats`, refreshed by autovacuum's ANALYZE). A rare finished
    ///   state missing from the statistics' common values is not reported.
    public func countsByState() async throws -> [MessageState: Int] {
        try await connection { connection in
            let rows = try await Self.first(connection, """
                SELECT reltuples::float8 FROM pg_class WHERE oid = 'messages'::regclass
                """, logger: self.logger) { try $0.decode(Double.self) } ?? -1
            if rows < Double(self.configuration.exactCountRows) {
                return try await Self.counts(connection, logger: self.logger, "SELECT state, count(*) FROM messages GROUP BY state")
            }
            // The waiting rows from `messages_active_unclaimed`, the claimed
            // ones (not in it since schema v3) from `messages_leases`, in one
            // snapshot.
            var counts = try await Self.counts(connection, logger: self.logger, """
                SELECT state, count(*) FROM (
                    SELECT state FROM messages WHERE state IN ('scheduled', 'handed_off') AND sending_since IS NULL
                    UNION ALL
                    SELECT state FROM messages WHERE sending_since IS NOT NULL AND state IN ('scheduled', 'handed_off')
                ) AS active GROUP BY state
                """)
            let statistics = try await Self.first(connection, """
                SELECT most_common_vals::text::text[], most_common_freqs::float8[] FROM pg_stats
                WHERE tablename = 'messages' AND attname = 'state'
                  AND schemaname = (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                                    WHERE c.oid = 'messages'::regclass)
                """, logger: self.logger) { try $0.decode(([String]?, [Double]?).self) }
            if let (values, frequencies) = statistics, let values, let frequencies {
                for (text, frequency) in zip(values, frequencies) {
                    guard let state = MessageState(rawValue: text), state != .scheduled, state != .handedOff else { continue }
                    let estimate = Int((rows * frequency).rounded())
                    if estimate > 0 { counts[state] = estimate }
                }
            }
            return counts
        }
    }

    private static func counts(_ connection: PostgresConnection, logger: Logger, _ query: PostgresQuery) async throws -> [MessageState: Int] {
        var counts: [MessageState: Int] = [:]
        for (state, count) in try await rows(connection, query, logger: logger, { try $0.decode((String, Int64).self) }) {
            counts[try PostgresRows.state(state)] = Int(count)
        }
        return counts
    }

    /// The oldest waiting message due by `now`: the first entry of `messages_due`.
    public func oldestDue(now: Int64) async throws -> Int64? {
        try await connection { connection in
            try await Self.first(connection, """
                SELECT min(due_at) FROM messages
                WHERE state IN ('scheduled', 'handed_off') AND sending_since IS NULL AND due_at <= \(now)
                """, logger: self.logger) { try $0.decode(Int64?.self) } ?? nil
        }
    }

    /// Retention (see `FinishedMessagePruning` and SQLite's notes): one
    /// transaction per batch, oldest first through `messages_finished`.
    /// Locks are taken in Schedule's order (the key rows, then the
    /// messages), and the DELETE checks the terms again, so a message that
    /// changed since it was picked stays.
    public func pruneFinished(before cutoff: Int64, limit: Int) async throws -> PruneBatch {
        let limit = max(1, limit)
        return try await transaction { connection in
            let candidates = try await Self.rows(connection, """
                SELECT id FROM messages
                WHERE state NOT IN ('scheduled', 'handed_off') AND updated_at < \(cutoff) AND sending_since IS NULL
                  AND NOT EXISTS (SELECT 1 FROM revokes r WHERE r.message_id = messages.id)
                ORDER BY updated_at LIMIT \(limit)
                """, logger: self.logger) { try $0.decode(String.self) }
            guard !candidates.isEmpty else { return PruneBatch(messages: 0, outcomes: 0) }
            _ = try await Self.run(
                connection, "SELECT 1 FROM message_keys WHERE message_id = ANY(\(candidates)) FOR UPDATE", logger: self.logger)
            let deleted = try await Self.rows(connection, """
                DELETE FROM messages
                WHERE id = ANY(\(candidates)) AND state NOT IN ('scheduled', 'handed_off') AND updated_at < \(cutoff)
                  AND sending_since IS NULL AND NOT EXISTS (SELECT 1 FROM revokes r WHERE r.message_id = messages.id)
                RETURNING id
                """, logger: self.logger) { try $0.decode(String.self) }
            guard !deleted.isEmpty else { return PruneBatch(messages: 0, outcomes: 0) }
            let outcomes = try await Self.run(
                connection, "DELETE FROM outcomes WHERE message_id = ANY(\(deleted)) RETURNING 1", logger: self.logger)
            try await connection.query("DELETE FROM handovers WHERE message_id = ANY(\(deleted))", logger: self.logger)
            // Only keys these messages still hold (a superseded message's key
            // belongs to its successor).
            try await connection.query("DELETE FROM message_keys WHERE message_id = ANY(\(deleted))", logger: self.logger)
            return PruneBatch(messages: deleted.count, outcomes: outcomes)
        }
    }
}
