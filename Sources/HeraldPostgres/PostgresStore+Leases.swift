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
    /// statement, in ``DueTurns`` order (fair across bundles, transactional
    /// first), skipping rows another replica is claiming right now
    /// (`FOR UPDATE SKIP LOCKED`).
    ///
    /// The bundles with a waiting message are walked one index probe each
    /// (`lanes`, a loose index scan of `messages_due_lanes`); each bundle's
    /// due messages are read in its order from the same index, at most its
    /// quota (two range scans: transactional, then the rest), locked as
    /// they are read (`SKIP LOCKED`: two replicas polling at once take
    /// different rows — picking first and locking after, the second found
    /// the first's picks locked and claimed nothing, which halved two
    /// replicas' dispatch); the turns are ranked and the first `limit`
    /// claimed. The cost: with k bundles due at once, up to k × `limit` rows
    /// are locked for the statement's length though `limit` are claimed.
    /// The picked rows are materialized once: as a subquery joined to the
    /// UPDATE, a plan that rescans it per row picked the next unlocked row
    /// each time and claimed every due message, whatever `limit`.
    public func claimDue(
        before: Int64, limit: Int, now: Int64, quota: [String: Int], after: String?
    ) async throws -> [StoredMessage] {
        let leaseUntil = now + configuration.leaseMilliseconds
        let limit = max(0, limit)
        let capped = quota.sorted { $0.key < $1.key }
        let claimed = try await autocommit { connection in
            try await Self.rows(connection, """
                WITH RECURSIVE lanes(b) AS (
                    (SELECT bundle_id FROM messages
                     WHERE state IN ('scheduled', 'handed_off') AND sending_since IS NULL ORDER BY bundle_id LIMIT 1)
                    UNION ALL
                    SELECT (SELECT bundle_id FROM messages
                            WHERE state IN ('scheduled', 'handed_off') AND sending_since IS NULL AND bundle_id > lanes.b
                            ORDER BY bundle_id LIMIT 1)
                    FROM lanes WHERE lanes.b IS NOT NULL),
                quota AS (
                    SELECT l.b, least(coalesce(q.n, \(limit)), \(limit)) AS n
                    FROM lanes l LEFT JOIN unnest(\(capped.map(\.key))::text[], \(capped.map { Int64($0.value) })::bigint[]) AS q(b, n)
                        ON q.b = l.b
                    WHERE l.b IS NOT NULL),
                picked AS MATERIALIZED (
                    SELECT c.id FROM (
                        SELECT p.id, p.due_at, p.transactional, q.b,
                               row_number() OVER (PARTITION BY q.b ORDER BY p.transactional DESC, p.due_at, p.id) AS turn
                        FROM quota q CROSS JOIN LATERAL (
                            SELECT tx.id, tx.due_at, tx.transactional FROM (
                                SELECT id, due_at, transactional FROM messages
                                WHERE state IN ('scheduled', 'handed_off') AND sending_since IS NULL
                                  AND bundle_id = q.b AND transactional AND due_at <= \(before)
                                ORDER BY due_at, id LIMIT q.n FOR UPDATE SKIP LOCKED) AS tx
                            UNION ALL
                            SELECT rest.id, rest.due_at, rest.transactional FROM (
                                SELECT id, due_at, transactional FROM messages
                                WHERE state IN ('scheduled', 'handed_off') AND sending_since IS NULL
                                  AND bundle_id = q.b AND NOT transactional AND due_at <= \(before)
                                ORDER BY due_at, id LIMIT q.n FOR UPDATE SKIP LOCKED) AS rest
                            LIMIT q.n) AS p
                        WHERE q.n > 0) AS c
                    ORDER BY c.turn, coalesce(c.b COLLATE "C" <= \(after)::text, false), c.b COLLATE "C",
                             c.transactional DESC, c.due_at, c.id
                    LIMIT \(limit))
                UPDATE messages AS m
                SET sending_since = \(now), send_started_at = coalesce(m.send_started_at, \(now)),
                    push_started_at = coalesce(m.push_started_at, \(now)), attempts = m.attempts + 1, updated_at = \(now),
                    owner = \(self.configuration.replicaID), lease_until = \(leaseUntil)
                FROM picked
                WHERE m.id = picked.id AND m.sending_since IS NULL
                RETURNING \(unescaped: Self.qualifiedColumns)
                """, logger: self.logger, PostgresRows.message)
        }
        // The statement's order is lost in the UPDATE: the same turns again.
        return DueTurns.pick(claimed, limit: limit, after: after)
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
