import HeraldCore
public import HeraldStorage
import PostgresNIO

extension PostgresStore {
    public func messageDetail(bundleID: String, messageID: String) async throws -> MessageDetail? {
        try await snapshot { connection in
            try await Self.detail(connection, logger: self.logger, """
                SELECT \(unescaped: PostgresRows.summaryColumns) FROM messages WHERE id = \(messageID) AND bundle_id = \(bundleID)
                """)
        }
    }

    public func messageDetail(bundleID: String, idempotencyKey: String) async throws -> MessageDetail? {
        try await snapshot { connection in
            try await Self.detail(connection, logger: self.logger, """
                SELECT \(unescaped: PostgresRows.summaryColumns) FROM messages
                WHERE id = (SELECT message_id FROM message_keys WHERE bundle_id = \(bundleID) AND idempotency_key = \(idempotencyKey))
                """)
        }
    }

    /// An index range scan of `messages_user_unclaimed`, newest first,
    /// beside the claimed rows (left out of that index since schema v3,
    /// found through `messages_leases`: what replicas are sending); the
    /// filters apply to the rows they meet. One row more than asked tells
    /// whether a next page exists.
    public func listMessages(_ query: MessageListQuery) async throws -> MessagePage {
        let states: [String]? = query.states.isEmpty ? nil : query.states.map(\.rawValue).sorted()
        let after = query.after ?? MessageCursor(createdAt: .max, id: "")
        let first = query.after == nil
        let (bundle, user, campaign, limit) = (query.bundleID, query.userID, query.campaignID, query.limit + 1)
        var items = try await connection(on: .reads) { connection in
            // The unclaimed rows from `messages_user_unclaimed` (its
            // predicate spelled out, so the planner uses it), the claimed
            // ones from `messages_leases`, merged newest first.
            try await Self.rows(connection, """
                SELECT * FROM (
                    (SELECT \(unescaped: PostgresRows.summaryColumns) FROM messages
                     WHERE sending_since IS NULL AND bundle_id = \(bundle) AND user_id = \(user)
                       AND (\(first) OR (created_at, id) < (\(after.createdAt), \(after.id)))
                       AND (\(campaign)::text IS NULL OR campaign_id = \(campaign))
                       AND (\(states)::text[] IS NULL OR state = ANY(\(states)))
                     ORDER BY created_at DESC, id DESC LIMIT \(limit))
                    UNION ALL
                    (SELECT \(unescaped: PostgresRows.summaryColumns) FROM messages
                     WHERE sending_since IS NOT NULL AND bundle_id = \(bundle) AND user_id = \(user)
                       AND (\(first) OR (created_at, id) < (\(after.createdAt), \(after.id)))
                       AND (\(campaign)::text IS NULL OR campaign_id = \(campaign))
                       AND (\(states)::text[] IS NULL OR state = ANY(\(states))))) AS t
                ORDER BY created_at DESC, id DESC LIMIT \(limit)
                """, logger: self.logger) { row in
                MessageSummaryRow(message: try PostgresRows.message(row), milestones: try PostgresRows.milestones(row))
            }
        }
        guard items.count > query.limit else { return MessagePage(items: items, next: nil) }
        items.removeLast()
        let last = items[items.count - 1].message
        return MessagePage(items: items, next: MessageCursor(createdAt: last.createdAt, id: last.id))
    }

    /// One range scan of `messages_campaign_unclaimed` (index-only once
    /// vacuumed), grouped in index order, and the campaign's claimed rows
    /// (not in that index since schema v3), in one statement (one snapshot:
    /// a row that a claim or an end moves meanwhile counts once);
    /// `MessageFunnel` turns the groups into counts.
    public func campaignCounts(
        bundleID: String, campaignID: String, createdFrom: Int64?, createdBefore: Int64?
    ) async throws -> [CohortCounts] {
        let groups = try await connection(on: .reads) { connection in
            try await Self.rows(connection, """
                SELECT delivery_method, ab_test, funnel, sum(n)::bigint FROM (
                    SELECT delivery_method, ab_test, funnel::bigint AS funnel, count(*) AS n
                    FROM messages
                    WHERE bundle_id = \(bundleID) AND campaign_id = \(campaignID)
                      AND created_at >= \(createdFrom ?? .min) AND created_at < \(createdBefore ?? .max)
                      AND sending_since IS NULL
                    GROUP BY delivery_method, ab_test, funnel
                    UNION ALL
                    SELECT delivery_method, ab_test, funnel::bigint, count(*)
                    FROM messages
                    WHERE sending_since IS NOT NULL AND bundle_id = \(bundleID) AND campaign_id = \(campaignID)
                      AND created_at >= \(createdFrom ?? .min) AND created_at < \(createdBefore ?? .max)
                    GROUP BY delivery_method, ab_test, funnel) AS g
                GROUP BY delivery_method, ab_test, funnel
                ORDER BY delivery_method, ab_test, funnel
                """, logger: self.logger) { try $0.decode((String, Bool, Int64, Int64).self) }
        }
        var cohorts: [CohortCounts] = []
        for (methodText, abTest, funnel, count) in groups {
            guard let method = DeliveryMethod(rawValue: methodText) else {
                throw StoreError.invalidRecord("campaign \(campaignID): unknown delivery method \(methodText)")
            }
            if cohorts.last?.deliveryMethod != method || cohorts.last?.abTest != abTest {
                cohorts.append(CohortCounts(deliveryMethod: method, abTest: abTest))
            }
            MessageFunnel(rawValue: Int(funnel)).add(Int(count), to: &cohorts[cohorts.count - 1])
        }
        // The delivery policy's counts (schema v6): only the messages the
        // partial index `messages_policy` holds.
        let policy = try await connection(on: .reads) { connection in
            try await Self.rows(connection, """
                SELECT delivery_method, ab_test, count(*) FILTER (WHERE deferred_at IS NOT NULL)::bigint,
                       count(*) FILTER (WHERE state = 'suppressed')::bigint
                FROM messages
                WHERE bundle_id = \(bundleID) AND campaign_id = \(campaignID)
                  AND created_at >= \(createdFrom ?? .min) AND created_at < \(createdBefore ?? .max)
                  AND (deferred_at IS NOT NULL OR state = 'suppressed') AND state <> 'superseded'
                GROUP BY delivery_method, ab_test
                """, logger: self.logger) { try $0.decode((String, Bool, Int64, Int64).self) }
        }
        for (method, abTest, deferred, suppressed) in policy {
            guard let index = cohorts.firstIndex(where: { $0.deliveryMethod.rawValue == method && $0.abTest == abTest }) else { continue }
            cohorts[index].deferred += Int(deferred)
            cohorts[index].suppressed += Int(suppressed)
        }
        // A cohort of superseded messages only counts nothing.
        cohorts.removeAll { $0.scheduled == 0 }
        return cohorts
    }

    // MARK: Rows

    /// Runs `body` in a read-only REPEATABLE READ transaction: every query
    /// of it sees one snapshot (a message with its outcomes and marks).
    func snapshot<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await connection(on: .reads) { connection in
            try await Self.inTransaction(connection, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: self.logger, body)
        }
    }

    /// The row `query` finds (if any), its outcomes, its devices in flight
    /// and who superseded it.
    static func detail(_ connection: PostgresConnection, logger: Logger, _ query: PostgresQuery) async throws -> MessageDetail? {
        guard let (message, milestones) = try await first(connection, query, logger: logger, { row in
            (try PostgresRows.message(row), try PostgresRows.milestones(row))
        }) else { return nil }
        var supersededBy: String?
        if message.state == .superseded, let key = message.idempotencyKey {
            supersededBy = try await first(connection, """
                SELECT message_id FROM message_keys WHERE bundle_id = \(message.bundleID) AND idempotency_key = \(key)
                """, logger: logger) { try $0.decode(String.self) }
        }
        let outcomes = try await rows(connection, """
            SELECT message_id, device_token, status, provider_message_id, reason, at, http_status, attempts, environment, not_before
            FROM outcomes WHERE message_id = \(message.id) AND status NOT IN ('displayed', 'opened')
            ORDER BY seq LIMIT \(MessageDetail.maxDeviceEntries)
            """, logger: logger, PostgresRows.outcome)
        var inFlight: [HandOverMark] = []
        if let push = message.pushStartedAt {
            inFlight = try await rows(connection, """
                SELECT h.device_token, h.at FROM handovers h
                WHERE h.message_id = \(message.id) AND h.push = \(push) AND NOT EXISTS (
                    SELECT 1 FROM outcomes o
                    WHERE o.message_id = h.message_id AND o.device_token = h.device_token AND o.at >= \(push)
                      AND o.status <> 'waiting')
                ORDER BY h.at, h.device_token LIMIT \(MessageDetail.maxDeviceEntries)
                """, logger: logger) { row in
                let (token, at) = try row.decode((String, Int64).self)
                return HandOverMark(messageID: message.id, deviceToken: token, push: push, at: at)
            }
        }
        return MessageDetail(
            message: message, milestones: milestones, supersededBy: supersededBy == message.id ? nil : supersededBy,
            outcomes: outcomes, inFlight: inFlight)
    }
}
