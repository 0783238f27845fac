import HeraldCore

extension SQLiteStore: MessageReadSide {
    /// `MessageRows.columns` without the request blob (read as an empty blob,
    /// so `MessageRows.decode` applies), `transactional` (21), then the
    /// milestones (22…25).
    static let summaryColumns = """
        id, bundle_id, platform, user_id, campaign_id, idempotency_key, delivery_method, ab_test, \
        window_start, window_end, due_at, state, created_at, updated_at, attempts, last_error, provider_message_id, \
        sending_since, send_started_at, push_started_at, X'', transactional, handed_off_at, sent_at, displayed_at, opened_at
        """

    static let detailByID = "SELECT \(summaryColumns) FROM messages WHERE id = ?1 AND bundle_id = ?2"

    static let detailByKey = """
        SELECT \(summaryColumns) FROM messages
        WHERE id = (SELECT message_id FROM message_keys WHERE bundle_id = ?1 AND idempotency_key = ?2)
        """

    // Index seeks on messages_user (bundle_id, user_id, created_at, id),
    // walked backwards; the filters apply to the rows the walk meets.
    static let listFirst = """
        SELECT \(summaryColumns) FROM messages INDEXED BY messages_user
        WHERE bundle_id = ?1 AND user_id = ?2
          AND (?3 IS NULL OR campaign_id = ?3) AND (?4 IS NULL OR instr(?4, ',' || state || ',') > 0)
        ORDER BY created_at DESC, id DESC LIMIT ?5
        """

    static let listAfter = """
        SELECT \(summaryColumns) FROM messages INDEXED BY messages_user
        WHERE bundle_id = ?1 AND user_id = ?2 AND (created_at, id) < (?6, ?7)
          AND (?3 IS NULL OR campaign_id = ?3) AND (?4 IS NULL OR instr(?4, ',' || state || ',') > 0)
        ORDER BY created_at DESC, id DESC LIMIT ?5
        """

    // One range scan of the covering index messages_campaign, already in
    // GROUP BY order: no sort, no table lookup, one count per group (a few
    // dozen groups at most); `MessageFunnel` turns them into the counts.
    static let campaign = """
        SELECT delivery_method, ab_test, funnel, count(*)
        FROM messages INDEXED BY messages_campaign
        WHERE bundle_id = ?1 AND campaign_id = ?2 AND created_at >= ?3 AND created_at < ?4
        GROUP BY delivery_method, ab_test, funnel
        """

    // A whole campaign (no time range): the counts schema v14 keeps, a few
    // dozen rows in GROUP BY order, the policy's counts beside the funnel's
    // (deferred: held at least once and not superseded, as below).
    static let campaignTotals = """
        SELECT delivery_method, ab_test, funnel, sum(n),
               sum(CASE WHEN policy & 1 AND funnel >> 4 <> 5 THEN n ELSE 0 END), sum(CASE WHEN policy & 2 THEN n ELSE 0 END)
        FROM campaign_funnel
        WHERE bundle_id = ?1 AND campaign_id = ?2
        GROUP BY delivery_method, ab_test, funnel
        """

    // The delivery policy's counts (schema v10): the partial index
    // messages_policy holds only the messages it held or suppressed
    // (`suppressed_at` since v15).
    static let campaignPolicy = """
        SELECT delivery_method, ab_test, sum(deferred_at IS NOT NULL), sum(state = 'suppressed')
        FROM messages INDEXED BY messages_policy
        WHERE bundle_id = ?1 AND campaign_id = ?2 AND created_at >= ?3 AND created_at < ?4
          AND (deferred_at IS NOT NULL OR suppressed_at IS NOT NULL) AND state <> 'superseded'
        GROUP BY delivery_method, ab_test
        """

    public func messageDetail(bundleID: String, messageID: String) async throws -> MessageDetail? {
        try await readSide.read { db in
            let statement = try db.cached(Self.detailByID)
            try statement.bind(messageID, at: 1)
            try statement.bind(bundleID, at: 2)
            return try Self.detail(statement, db)
        }
    }

    public func messageDetail(bundleID: String, idempotencyKey: String) async throws -> MessageDetail? {
        try await readSide.read { db in
            let statement = try db.cached(Self.detailByKey)
            try statement.bind(bundleID, at: 1)
            try statement.bind(idempotencyKey, at: 2)
            return try Self.detail(statement, db)
        }
    }

    public func listMessages(_ query: MessageListQuery) async throws -> MessagePage {
        try await readSide.read { db in
            let statement = try db.cached(query.after == nil ? Self.listFirst : Self.listAfter)
            try statement.bind(query.bundleID, at: 1)
            try statement.bind(query.userID, at: 2)
            try statement.bind(query.campaignID, at: 3)
            let states = query.states.isEmpty ? nil : "," + query.states.map(\.rawValue).joined(separator: ",") + ","
            try statement.bind(states, at: 4)
            // One more than asked: whether a next page exists, without a count.
            try statement.bind(query.limit + 1, at: 5)
            if let after = query.after {
                try statement.bind(after.createdAt, at: 6)
                try statement.bind(after.id, at: 7)
            }
            var items: [MessageSummaryRow] = []
            items.reserveCapacity(min(query.limit + 1, 512))
            while try statement.step() {
                items.append(MessageSummaryRow(message: try MessageRows.decode(statement), milestones: Self.milestones(statement)))
            }
            guard items.count > query.limit else { return MessagePage(items: items, next: nil) }
            items.removeLast()
            let last = items[items.count - 1].message
            return MessagePage(items: items, next: MessageCursor(createdAt: last.createdAt, id: last.id))
        }
    }

    public func campaignCounts(
        bundleID: String, campaignID: String, createdFrom: Int64?, createdBefore: Int64?
    ) async throws -> [CohortCounts] {
        try await readSide.read { db in
            if createdFrom == nil, createdBefore == nil { return try Self.campaignTotals(db, bundleID: bundleID, campaignID: campaignID) }
            let statement = try db.cached(Self.campaign)
            try statement.bind(bundleID, at: 1)
            try statement.bind(campaignID, at: 2)
            try statement.bind(createdFrom ?? .min, at: 3)
            try statement.bind(createdBefore ?? .max, at: 4)
            var cohorts: [CohortCounts] = []
            while try statement.step() { _ = try Self.addFunnelRow(statement, to: &cohorts, campaignID: campaignID) }
            statement.reset()
            let policy = try db.cached(Self.campaignPolicy)
            try policy.bind(bundleID, at: 1)
            try policy.bind(campaignID, at: 2)
            try policy.bind(createdFrom ?? .min, at: 3)
            try policy.bind(createdBefore ?? .max, at: 4)
            while try policy.step() {
                let method = policy.string(0), abTest = policy.int64(1) != 0
                guard let index = cohorts.firstIndex(where: { $0.deliveryMethod.rawValue == method && $0.abTest == abTest }) else { continue }
                cohorts[index].deferred += policy.int(2)
                cohorts[index].suppressed += policy.int(3)
            }
            policy.reset()
            // A cohort of superseded messages only counts nothing.
            cohorts.removeAll { $0.scheduled == 0 }
            return cohorts
        }
    }

    private static func campaignTotals(_ db: Database, bundleID: String, campaignID: String) throws -> [CohortCounts] {
        let statement = try db.cached(Self.campaignTotals)
        defer { statement.reset() }
        try statement.bind(bundleID, at: 1)
        try statement.bind(campaignID, at: 2)
        var cohorts: [CohortCounts] = []
        while try statement.step() {
            let index = try addFunnelRow(statement, to: &cohorts, campaignID: campaignID)
            cohorts[index].deferred += statement.int(4)
            cohorts[index].suppressed += statement.int(5)
        }
        cohorts.removeAll { $0.scheduled == 0 }
        return cohorts
    }

    /// Adds one (method, assignment, funnel, count) row, in GROUP BY order,
    /// to its cohort (the last one, or a new one); returns the cohort's index.
    private static func addFunnelRow(_ statement: Statement, to cohorts: inout [CohortCounts], campaignID: String) throws -> Int {
        guard let method = DeliveryMethod(rawValue: statement.string(0)) else {
            throw StoreError.invalidRecord("campaign \(campaignID): unknown delivery method \(statement.string(0))")
        }
        let abTest = statement.int64(1) != 0
        if cohorts.last?.deliveryMethod != method || cohorts.last?.abTest != abTest {
            cohorts.append(CohortCounts(deliveryMethod: method, abTest: abTest))
        }
        MessageFunnel(rawValue: statement.int(2)).add(statement.int(3), to: &cohorts[cohorts.count - 1])
        return cohorts.count - 1
    }

    // MARK: Rows

    private static func milestones(_ s: Statement) -> MessageMilestones {
        MessageMilestones(handedOffAt: s.optionalInt64(22), sentAt: s.optionalInt64(23),
                          displayedAt: s.optionalInt64(24), openedAt: s.optionalInt64(25))
    }

    /// The row `statement` finds (if any), its outcomes, its devices in
    /// flight and who superseded it, from one connection (one snapshot).
    private static func detail(_ statement: Statement, _ db: Database) throws -> MessageDetail? {
        guard try statement.step() else { return nil }
        let message = try MessageRows.decode(statement)
        let milestones = milestones(statement)
        statement.reset()
        var supersededBy: String?
        if message.state == .superseded, let key = message.idempotencyKey {
            let holder = try db.cached("SELECT message_id FROM message_keys WHERE bundle_id = ?1 AND idempotency_key = ?2")
            try holder.bind(message.bundleID, at: 1)
            try holder.bind(key, at: 2)
            if try holder.step() { supersededBy = holder.string(0) }
            holder.reset()
        }
        return MessageDetail(
            message: message, milestones: milestones, supersededBy: supersededBy == message.id ? nil : supersededBy,
            outcomes: try outcomes(of: message.id, db), inFlight: try inFlight(message, db))
    }

    private static func outcomes(of id: String, _ db: Database) throws -> [DeviceOutcome] {
        let statement = try db.cached("""
            SELECT message_id, device_token, status, provider_message_id, reason, at, http_status, attempts, environment, not_before
            FROM outcomes WHERE message_id = ?1 AND status NOT IN ('displayed', 'opened') ORDER BY rowid LIMIT ?2
            """)
        try statement.bind(id, at: 1)
        try statement.bind(MessageDetail.maxDeviceEntries, at: 2)
        var outcomes: [DeviceOutcome] = []
        while try statement.step() {
            outcomes.append(DeviceOutcome(
                messageID: statement.string(0), deviceToken: statement.string(1),
                kind: DeviceOutcomeKind(rawValue: statement.string(2)), providerMessageID: statement.optionalString(3),
                reason: statement.optionalString(4), at: statement.int64(5),
                httpStatus: statement.optionalInt64(6).map(Int.init), attempts: statement.optionalInt64(7).map(Int.init),
                environment: statement.optionalString(8).flatMap(APNsEnvironment.init(rawValue:)),
                notBefore: statement.optionalInt64(9)))
        }
        return outcomes
    }

    /// Hand-over marks of the open push with no answer recorded for it yet.
    private static func inFlight(_ message: StoredMessage, _ db: Database) throws -> [HandOverMark] {
        guard let push = message.pushStartedAt else { return [] }
        let statement = try db.cached("""
            SELECT h.device_token, h.at FROM handovers h
            WHERE h.message_id = ?1 AND h.push = ?2 AND NOT EXISTS (
                SELECT 1 FROM outcomes o WHERE o.message_id = h.message_id AND o.device_token = h.device_token AND o.at >= ?2
                  AND o.status <> 'waiting')
            ORDER BY h.at, h.device_token LIMIT ?3
            """)
        try statement.bind(message.id, at: 1)
        try statement.bind(push, at: 2)
        try statement.bind(MessageDetail.maxDeviceEntries, at: 3)
        var marks: [HandOverMark] = []
        while try statement.step() {
            marks.append(HandOverMark(messageID: message.id, deviceToken: statement.string(0), push: push, at: statement.int64(1)))
        }
        return marks
    }
}
