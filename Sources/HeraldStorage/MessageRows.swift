import HeraldCore

/// Row mapping for `messages`.
enum MessageRows {
    static let columns = """
        id, bundle_id, platform, user_id, campaign_id, idempotency_key, delivery_method, ab_test, \
        window_start, window_end, due_at, state, created_at, updated_at, attempts, last_error, provider_message_id, \
        sending_since, send_started_at, push_started_at, request, transactional
        """

    // Built once: statement-cache lookups hash the SQL text, and building
    // it per call would allocate too.
    static let selectByID = "SELECT \(columns) FROM messages WHERE id = ?1"

    static let selectLive = """
        SELECT \(columns) FROM messages
        WHERE id = (SELECT message_id FROM message_keys WHERE bundle_id = ?1 AND idempotency_key = ?2)
        """

    static let selectDue = """
        SELECT \(columns) FROM messages
        WHERE state IN ('scheduled', 'handed_off') AND sending_since IS NULL AND due_at <= ?1
        ORDER BY due_at, id LIMIT ?2
        """

    /// Claims message `id` (in state `from`, or in either waiting state
    /// when nil: SCHEDULED, or HANDED_OFF for the fallback) at `now`: reads
    /// the row, then updates it by rowid, and returns it as claimed. Not one
    /// `UPDATE … RETURNING`: SQLite keeps RETURNING's rows in an ephemeral
    /// table, a new b-tree with three zeroed pages per statement, which was a
    /// third of a claim's instructions (bench/RESULTS.md, Session 44).
    static func claim(_ db: Database, id: String, from: MessageState?, now: Int64) throws -> StoredMessage? {
        let select = try db.cached(from == nil ? selectWaiting : selectInState)
        try select.bind(id, at: 1)
        if let from { try select.bind(from.rawValue, at: 2) }
        guard try select.step() else { return nil }
        var message = try decode(select)
        let rowid = select.int64(claimRowidColumn)
        select.reset()
        try db.run(claimRow) {
            try $0.bind(rowid, at: 1)
            try $0.bind(now, at: 2)
        }
        // As `claimRow` set them.
        message.sendingSince = now
        message.sendStartedAt = message.sendStartedAt ?? now
        message.pushStartedAt = message.pushStartedAt ?? now
        message.attempts += 1
        message.updatedAt = now
        return message
    }

    private static let selectInState = HotSQL(selectClaimable(state: "state = ?2"))

    private static let selectWaiting = HotSQL(selectClaimable(state: "state IN ('scheduled', 'handed_off')"))

    /// The column after `columns` in `selectClaimable`.
    private static let claimRowidColumn: Int32 = 22

    private static func selectClaimable(state: String) -> String {
        "SELECT \(columns), rowid FROM messages WHERE id = ?1 AND \(state) AND sending_since IS NULL"
    }

    /// The claim's write (?1 = rowid, ?2 = now), on a row `selectClaimable`
    /// just read in the same write transaction.
    private static let claimRow = HotSQL("""
        UPDATE messages
        SET sending_since = ?2, send_started_at = coalesce(send_started_at, ?2),
            push_started_at = coalesce(push_started_at, ?2), attempts = attempts + 1, updated_at = ?2
        WHERE rowid = ?1
        """)

    /// The INSERT of `rows` messages: `columns` plus `funnel`, one
    /// `(?, …)` group of `insertWidth` parameters per row.
    static func insertSQL(rows: Int) -> String {
        let group = "(" + Array(repeating: "?", count: Int(insertWidth)).joined(separator: ", ") + ")"
        return "INSERT INTO messages(\(columns), funnel) VALUES "
            + Array(repeating: group, count: rows).joined(separator: ", ")
    }

    /// Parameters per inserted row.
    static let insertWidth: Int32 = 23

    /// Adds `n` to the count of `state` (the INSERT has no count trigger
    /// since schema v6; UPDATE and DELETE keep theirs).
    static func count(_ db: Database, _ state: MessageState, _ n: Int) throws {
        try db.run(countStateSQL) {
            try $0.bind(state.rawValue, at: 1)
            try $0.bind(n, at: 2)
        }
    }

    /// Where an inserted message counts in schema v14's `campaign_funnel`
    /// (no INSERT trigger on `messages` since v6: `MessageInsertBatch`
    /// counts what it inserts, a run of equal keys in one upsert).
    struct CampaignCountKey: Equatable {
        var bundleID: String
        var campaignID: String
        var deliveryMethod: DeliveryMethod
        var abTest: Bool
        var funnel: Int
        /// No `deferred_at` at insert: only SUPPRESSED sets a policy bit.
        var policy: Int

        init(inserting message: StoredMessage) {
            bundleID = message.bundleID
            campaignID = message.campaignID
            deliveryMethod = message.deliveryMethod
            abTest = message.abTest
            funnel = MessageFunnel.atInsert(message.state)
            policy = message.state == .suppressed ? 2 : 0
        }
    }

    /// Adds `n` inserted messages to the count of `key`.
    static func countCampaign(_ db: Database, _ key: CampaignCountKey, _ n: Int) throws {
        try db.run(countCampaignSQL) {
            try $0.bind(key.bundleID, at: 1)
            try $0.bind(key.campaignID, at: 2)
            try $0.bind(key.deliveryMethod.rawValue, at: 3)
            try $0.bind(key.abTest ? 1 : 0, at: 4)
            try $0.bind(key.funnel, at: 5)
            try $0.bind(key.policy, at: 6)
            try $0.bind(n, at: 7)
        }
    }

    /// Adds ?2 to the count of state ?1 (also `MessageChanges`' sums).
    static let countStateSQL = """
        INSERT INTO state_counts(state, n) VALUES (?1, ?2)
        ON CONFLICT(state) DO UPDATE SET n = n + excluded.n
        """

    /// Adds ?7 to the count of a campaign key (also `MessageChanges`' sums).
    static let countCampaignSQL = """
        INSERT INTO campaign_funnel(bundle_id, campaign_id, delivery_method, ab_test, funnel, policy, n)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO UPDATE SET n = n + excluded.n
        """

    /// Releases claims (`WHERE sending_since IS NOT NULL` plus the caller's
    /// terms; ?1 = now): the message waits again in its pre-claim state.
    /// A push with nothing handed over or answered yet is forgotten, and if
    /// it was the message's first claim its key is unspent again (nothing
    /// can have reached a device); otherwise the push stays open so the
    /// resumed claim skips the devices already done.
    static let release = """
        UPDATE messages
        SET \(releasing(touched: pushTouched)), updated_at = ?1
        WHERE sending_since IS NOT NULL
        """

    /// The columns a claim's release sets, given whether its push was
    /// `touched` (an SQL expression: `pushTouched`, or a bound value read
    /// with it): the one rule `release`, `release(_:id:now:)` and
    /// `SQLiteStore.holdUpdate` share.
    static func releasing(touched: String) -> String {
        """
        send_started_at = CASE WHEN send_started_at = sending_since AND NOT \(touched) THEN NULL ELSE send_started_at END,
            push_started_at = CASE WHEN \(touched) THEN push_started_at ELSE NULL END,
            sending_since = NULL
        """
    }

    /// Releases one message's claim (`release` for `id`, in the caller's
    /// write): reads the row and whether its push was touched once, then
    /// writes it by rowid — `release`'s text evaluates `pushTouched` (two
    /// probes) in each of its two CASEs. Returns whether a claim was held.
    static func release(_ db: Database, id: String, now: Int64) throws -> Bool {
        let read = try db.cached(releaseRead)
        try read.bind(id, at: 1)
        guard try read.step() else {
            read.reset()
            return false
        }
        let rowid = read.int64(0)
        let touched = read.int64(1)
        read.reset()
        try db.run(releaseRow) {
            try $0.bind(rowid, at: 1)
            try $0.bind(now, at: 2)
            try $0.bind(touched, at: 3)
        }
        return true
    }

    private static let releaseRead = HotSQL(
        "SELECT rowid, \(pushTouched) FROM messages WHERE id = ?1 AND sending_since IS NOT NULL")

    /// `release` by rowid (?1), with `pushTouched` read (?3) and ?2 = now.
    private static let releaseRow = HotSQL(
        "UPDATE messages SET \(releasing(touched: "?3")), updated_at = ?2 WHERE rowid = ?1")

    /// Whether the message's open push handed anything over or got any
    /// final answer (a WAITING device, held by the delivery policy, is not one).
    static let pushTouched = """
        (EXISTS (SELECT 1 FROM handovers h WHERE h.message_id = messages.id AND h.push = messages.push_started_at) \
        OR EXISTS (SELECT 1 FROM outcomes o WHERE o.message_id = messages.id AND o.at >= messages.push_started_at \
        AND o.status <> 'waiting'))
        """

    /// Refuses a change the life cycle does not allow. Every state write of
    /// the store (schedule's supersede, cancel, claim, transition) passes
    /// here first, so the table in `MessageState.allowedTransitions` is the
    /// only place that decides.
    static func check(id: String, from: MessageState, to: MessageState) throws(StoreError) {
        guard from.canTransition(to: to) else { throw .illegalTransition(from: from, to: to, id: id) }
    }

    /// A checked compare-and-set of the state alone (supersede, cancel):
    /// applies only while the row is still `from`. Returns whether it did.
    @discardableResult
    static func setState(_ db: Database, id: String, from: MessageState, to: MessageState, now: Int64) throws -> Bool {
        try check(id: id, from: from, to: to)
        try db.run("UPDATE messages SET state = ?3, updated_at = ?4 WHERE id = ?1 AND state = ?2") {
            try $0.bind(id, at: 1)
            try $0.bind(from.rawValue, at: 2)
            try $0.bind(to.rawValue, at: 3)
            try $0.bind(now, at: 4)
        }
        return db.changes > 0
    }

    /// The live message of (bundleID, key).
    static func live(_ db: Database, bundleID: String, key: String) throws -> StoredMessage? {
        let statement = try db.cached(selectLive)
        try statement.bind(bundleID, at: 1)
        try statement.bind(key, at: 2)
        guard try statement.step() else { return nil }
        let message = try decode(statement)
        statement.reset()
        return message
    }

    /// Binds `m`'s `columns` to parameters `offset + 1 … offset + 22` (the
    /// INSERT's `funnel` is parameter `offset + 23`).
    static func bind(_ m: StoredMessage, to s: Statement, after offset: Int32) throws {
        try bindThroughRequest(m, to: s, after: offset)
        try s.bind(m.transactional, at: offset + 22)
    }

    /// The columns up to `request` (`offset + 1 … offset + 21`): the row as
    /// builds before schema v11 wrote it.
    static func bindThroughRequest(_ m: StoredMessage, to s: Statement, after offset: Int32) throws {
        try s.bind(m.id, at: offset + 1)
        try s.bind(m.bundleID, at: offset + 2)
        try s.bind(m.platform.rawValue, at: offset + 3)
        try s.bind(m.userID, at: offset + 4)
        try s.bind(m.campaignID, at: offset + 5)
        try s.bind(m.idempotencyKey, at: offset + 6)
        try s.bind(m.deliveryMethod.rawValue, at: offset + 7)
        try s.bind(m.abTest, at: offset + 8)
        try s.bind(m.windowStart, at: offset + 9)
        try s.bind(m.windowEnd, at: offset + 10)
        try s.bind(m.dueAt, at: offset + 11)
        try s.bind(m.state.rawValue, at: offset + 12)
        try s.bind(m.createdAt, at: offset + 13)
        try s.bind(m.updatedAt, at: offset + 14)
        try s.bind(m.attempts, at: offset + 15)
        try s.bind(m.lastError, at: offset + 16)
        try s.bind(m.providerMessageID, at: offset + 17)
        try s.bind(m.sendingSince, at: offset + 18)
        try s.bind(m.sendStartedAt, at: offset + 19)
        try s.bind(m.pushStartedAt, at: offset + 20)
        try s.bind(m.request, at: offset + 21)
    }

    static func decode(_ s: Statement) throws -> StoredMessage {
        guard let platform = Platform(rawValue: s.string(2)) else {
            throw StoreError.invalidRecord("message \(s.string(0)): unknown platform \(s.string(2))")
        }
        guard let method = DeliveryMethod(rawValue: s.string(6)) else {
            throw StoreError.invalidRecord("message \(s.string(0)): unknown delivery method \(s.string(6))")
        }
        return StoredMessage(
            id: s.string(0), bundleID: s.string(1), platform: platform, userID: s.string(3),
            campaignID: s.string(4), idempotencyKey: s.optionalString(5), deliveryMethod: method,
            abTest: s.int64(7) != 0, windowStart: s.int64(8), windowEnd: s.int64(9), dueAt: s.int64(10),
            state: try state(s.string(11)), request: s.bytes(20), createdAt: s.int64(12),
            updatedAt: s.int64(13), attempts: s.int(14), lastError: s.optionalString(15),
            providerMessageID: s.optionalString(16), sendingSince: s.optionalInt64(17), sendStartedAt: s.optionalInt64(18),
            pushStartedAt: s.optionalInt64(19), transactional: s.int64(21) != 0)
    }

    static func state(_ text: String) throws -> MessageState {
        guard let state = MessageState(rawValue: text) else {
            throw StoreError.invalidRecord("unknown message state \(text)")
        }
        return state
    }
}
