import HeraldCore
public import HeraldStorage
import PostgresNIO

/// Scheduling across replicas: batch claims from the `messages_due` index,
/// leases renewed by their owner, expired ones taken over by any replica
/// (`SharedDueStore`; docs/SCALING.md).
extension PostgresStore: SharedDueStore {
    public var replicaID: String { configuration.replicaID }

    public var leaseMilliseconds: Int64 { configuration.leaseMilliseconds }

    /// Claims up to `limit` messages due at or before `before` in one
    /// statement, skipping rows another replica is claiming right now
    /// (`FOR UPDATE SKIP LOCKED`), oldest due first. The due rows are picked
    /// once (a MATERIALIZED CTE): as a subquery joined to the UPDATE, a plan
    /// that rescans it per row (a nested loop over a small or unanalyzed
    /// table) picked the next unlocked row each time and claimed every due
    /// message, whatever `limit`.
    public func claimDue(before: Int64, limit: Int, now: Int64) async throws -> [StoredMessage] {
        let leaseUntil = now + configuration.leaseMilliseconds
        return try await autocommit { connection in
            try await Self.rows(connection, """
                WITH due AS MATERIALIZED (
                    SELECT id FROM messages
                    WHERE state IN ('scheduled', 'handed_off') AND sending_since IS NULL AND due_at <= \(before)
                    ORDER BY due_at, id LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                UPDATE messages AS m
                SET sending_since = \(now), send_started_at = coalesce(m.send_started_at, \(now)),
                    push_started_at = coalesce(m.push_started_at, \(now)), attempts = m.attempts + 1, updated_at = \(now),
                    owner = \(self.configuration.replicaID), lease_until = \(leaseUntil)
                FROM due
                WHERE m.id = due.id AND m.sending_since IS NULL
                RETURNING \(unescaped: Self.qualifiedColumns)
                """, logger: self.logger, PostgresRows.message)
        }.sorted { ($0.dueAt, $0.id) < ($1.dueAt, $1.id) }
    }

    /// `PostgresRows.columns`, each prefixed with `m.`.
    static let qualifiedColumns = PostgresRows.columns.split(separator: ",").map { "m." + $0.trimmingSpaces }
        .joined(separator: ", ")

    /// Only rows still claimed by this replica (`owner`): a claim taken over
    /// (or finished) meanwhile is not extended. On the lease pool: never
    /// behind reads, Schedules or claims waiting for a connection.
    public func renewLeases(ids: [String], now: Int64) async throws -> Set<String> {
        guard !ids.isEmpty else { return [] }
        let leaseUntil = now + configuration.leaseMilliseconds
        return Set(try await autocommit(on: .leases) { connection in
            try await Self.rows(connection, """
                UPDATE messages SET lease_until = \(leaseUntil)
                WHERE id = ANY(\(ids)::text[]) AND sending_since IS NOT NULL AND owner = \(self.configuration.replicaID)
                RETURNING id
                """, logger: self.logger) { try $0.decode(String.self) }
        })
    }

    public func takeOverExpired(now: Int64) async throws -> InterruptedRecovery {
        try await recover(now: now, includingOwn: false)
    }

    /// At start: this replica's own claims (its previous life under the same
    /// replica id, so a restart resolves them at once) and expired ones;
    /// never a live replica's.
    public func recoverInterrupted(now: Int64) async throws -> InterruptedRecovery {
        try await recover(now: now, includingOwn: true)
    }

    /// The crash rule over the claims in scope, in one transaction: they are
    /// locked first (`SKIP LOCKED`: one that another replica is taking over
    /// or renewing right now is left to it), then each device handed over
    /// without an answer gets UNCONFIRMED, then each claim is released (the
    /// message waits again in its pre-claim state, for the devices without
    /// an outcome).
    private func recover(now: Int64, includingOwn: Bool) async throws -> InterruptedRecovery {
        // The lease pool: a takeover is as urgent as a renewal.
        try await transaction(on: .leases) { connection in
            let ids = try await Self.rows(connection, """
                SELECT id FROM messages
                WHERE sending_since IS NOT NULL
                  AND (coalesce(lease_until, 0) < \(now) OR (\(includingOwn) AND owner = \(self.configuration.replicaID)))
                ORDER BY id FOR UPDATE SKIP LOCKED
                """, logger: self.logger) { try $0.decode(String.self) }
            guard !ids.isEmpty else { return InterruptedRecovery(resumed: [], unconfirmedDevices: 0) }
            let unconfirmed = try await Self.run(connection, """
                INSERT INTO outcomes(message_id, device_token, status, provider_message_id, reason, at)
                SELECT h.message_id, h.device_token, \(DeviceOutcomeKind.unconfirmed.rawValue), NULL,
                       \(DeviceOutcomeKind.unconfirmedReason), \(now)
                FROM messages m JOIN handovers h ON h.message_id = m.id AND h.push = m.push_started_at
                WHERE m.id = ANY(\(ids)::text[]) AND NOT EXISTS (
                    SELECT 1 FROM outcomes o
                    WHERE o.message_id = h.message_id AND o.device_token = h.device_token AND o.at >= m.push_started_at
                      AND o.status <> 'waiting')
                ORDER BY h.message_id, h.at, h.device_token
                RETURNING 1
                """, logger: self.logger)
            let released = try await Self.rows(connection, """
                UPDATE messages SET \(unescaped: Self.releaseSet), updated_at = \(now)
                WHERE id = ANY(\(ids)::text[]) RETURNING id
                """, logger: self.logger) { try $0.decode(String.self) }
            return InterruptedRecovery(resumed: released.sorted(), unconfirmedDevices: unconfirmed)
        }
    }
}
