public import HeraldCore

extension SQLiteStore {
    // MARK: Messages (API)

    public func schedule(_ message: StoredMessage, deadline: ContinuousClock.Instant?) async throws -> ScheduleOutcome {
        try await writer.write(abandonment: WriteAbandonment(deadline: deadline), defersInserts: true) { db in
            try Self.schedule(message, db)
        }
    }

    /// The callback form (`CallbackScheduling`): a write job whose completion
    /// runs on the writer (or WAL-sync) thread, with no Task or continuation
    /// in between.
    public func schedule(
        _ message: StoredMessage, deadline: ContinuousClock.Instant?,
        completion: @escaping @Sendable (Result<ScheduleOutcome, any Error>) -> Void
    ) -> @Sendable () -> Void {
        let abandonment = WriteAbandonment(deadline: deadline)
        writer.write(
            abandonment: abandonment, defersInserts: true, { db in try Self.schedule(message, db) }, completion: completion)
        return { abandonment.cancel() }
    }

    /// One Schedule inside the writer's transaction (see `HeraldStore.schedule`).
    /// Its rows go into the writer's `MessageInsertBatch` when there is one.
    private static func schedule(_ message: StoredMessage, _ db: Database) throws -> ScheduleOutcome {
        let batch = db.insertBatch
        var supersededID: String?
        if let key = message.idempotencyKey {
            // The live-key look-up reads the table: a same-key Schedule of
            // this batch must be in it first.
            if let batch, batch.contains(bundleID: message.bundleID, key: key) {
                try batch.flush(db)
            }
            if let existing = try MessageRows.live(db, bundleID: message.bundleID, key: key) {
                if existing.keySpent {
                    return .alreadyExists(existing)
                }
                if existing.state == .scheduled {
                    try MessageRows.setState(db, id: existing.id, from: .scheduled, to: .superseded, now: message.createdAt)
                    supersededID = existing.id
                }
            }
        }
        if let batch {
            batch.append(message)
        } else {
            try insert([message], db)
        }
        return .scheduled(message, supersededID: supersededID)
    }

    /// Inserts `messages` (rows, live keys, counts) at once.
    static func insert(_ messages: [StoredMessage], _ db: Database) throws {
        let batch = MessageInsertBatch()
        messages.forEach(batch.append)
        try batch.flush(db)
    }

    public func cancel(
        bundleID: String, platform: Platform, userID: String, campaignID: String,
        idempotencyKey: String, now: Int64
    ) async throws -> CancelOutcome {
        try await write { db in
            guard var message = try MessageRows.live(db, bundleID: bundleID, key: idempotencyKey),
                  message.platform == platform, message.userID == userID, message.campaignID == campaignID
            else { return .notFound }
            if message.isSending { return .notCancelled(message) }
            switch message.state {
            case .cancelled:
                return .cancelled(message, revokeDue: false)
            case .scheduled, .handedOff:
                let handedOff = message.state == .handedOff
                try MessageRows.setState(db, id: message.id, from: message.state, to: .cancelled, now: now)
                if handedOff {
                    try db.run("INSERT OR IGNORE INTO revokes(message_id, due_at) VALUES (?1, ?2)") {
                        try $0.bind(message.id, at: 1)
                        try $0.bind(now, at: 2)
                    }
                }
                message.state = .cancelled
                message.updatedAt = now
                return .cancelled(message, revokeDue: handedOff)
            default:
                return .notCancelled(message)
            }
        }
    }

    public func message(id: String) async throws -> StoredMessage? {
        try read { db in
            let statement = try db.cached(MessageRows.selectByID)
            try statement.bind(id, at: 1)
            return try statement.step() ? try MessageRows.decode(statement) : nil
        }
    }

    public func message(bundleID: String, idempotencyKey: String) async throws -> StoredMessage? {
        try read { db in try MessageRows.live(db, bundleID: bundleID, key: idempotencyKey) }
    }

    // MARK: Scheduler and dispatcher

    public func due(before: Int64, limit: Int) async throws -> [StoredMessage] {
        try read { db in
            let statement = try db.cached(MessageRows.selectDue)
            try statement.bind(before, at: 1)
            try statement.bind(limit, at: 2)
            var messages: [StoredMessage] = []
            while try statement.step() {
                messages.append(try MessageRows.decode(statement))
            }
            return messages
        }
    }

    public func pending(after cursor: PendingCursor?, limit: Int) async throws -> [PendingEntry] {
        try read { db in
            let statement: Statement
            if let cursor {
                statement = try db.cached("""
                    SELECT id, due_at, state, bundle_id, transactional FROM messages
                    WHERE state IN ('scheduled', 'handed_off') AND sending_since IS NULL
                      AND (due_at, id) > (?1, ?2)
                    ORDER BY due_at, id LIMIT ?3
                    """)
                try statement.bind(cursor.dueAt, at: 1)
                try statement.bind(cursor.id, at: 2)
                try statement.bind(limit, at: 3)
            } else {
                statement = try db.cached("""
                    SELECT id, due_at, state, bundle_id, transactional FROM messages
                    WHERE state IN ('scheduled', 'handed_off') AND sending_since IS NULL
                    ORDER BY due_at, id LIMIT ?1
                    """)
                try statement.bind(limit, at: 1)
            }
            var entries: [PendingEntry] = []
            entries.reserveCapacity(limit)
            while try statement.step() {
                entries.append(PendingEntry(
                    id: statement.string(0), dueAt: statement.int64(1),
                    state: try MessageRows.state(statement.string(2)), bundleID: statement.string(3),
                    transactional: statement.int64(4) != 0))
            }
            return entries
        }
    }

    public func claim(id: String, from: MessageState, now: Int64) async throws -> StoredMessage? {
        // A claim opens a push, and every push may end SENT: a state that
        // cannot go there has no push to claim (checked before any write).
        try MessageRows.check(id: id, from: from, to: .sent)
        return try await write { db in try MessageRows.claim(db, id: id, from: from, now: now) }
    }

    public func transition(
        id: String, from: MessageState, to: MessageState, dueAt: Int64?,
        providerMessageID: String?, lastError: String?, now: Int64, recording outcomes: [DeviceOutcome]
    ) async throws -> Bool {
        // Before the write: a refused change records nothing, not even the outcomes.
        try MessageRows.check(id: id, from: from, to: to)
        let item = Transition(id: id, from: from, to: to, dueAt: dueAt, providerMessageID: providerMessageID, lastError: lastError, now: now,
                              outcomes: outcomes)
        return try await write { db in try Self.apply(item, in: db) }
    }

    public func recordOutcome(_ outcome: DeviceOutcome) async throws {
        try await write { db in try Self.insert(outcome, into: db) }
    }

    /// Records `outcome` and appends its event; a DISPLAYED or OPENED report
    /// already recorded for (message, device) changes nothing (schema v7's
    /// `outcomes_reports`). With the message's `subject` the event is written
    /// as is, else its columns are read from the message (schema v16: the
    /// store, not a trigger, appends an outcome's event).
    static func insert(_ outcome: DeviceOutcome, into db: Database, subject: EventSubject? = nil) throws {
        try db.run(insertOutcome) {
            try $0.bind(outcome.messageID, at: 1)
            try $0.bind(outcome.deviceToken, at: 2)
            try $0.bind(outcome.kind.rawValue, at: 3)
            try $0.bind(outcome.providerMessageID, at: 4)
            try $0.bind(outcome.reason, at: 5)
            try $0.bind(outcome.at, at: 6)
            try $0.bind(outcome.httpStatus.map(Int64.init), at: 7)
            try $0.bind(outcome.attempts.map(Int64.init), at: 8)
            try $0.bind(outcome.environment?.rawValue, at: 9)
            try $0.bind(outcome.notBefore, at: 10)
        }
        if db.changes > 0 { try appendEvent(of: outcome, subject: subject?.messageID == outcome.messageID ? subject : nil, into: db) }
        try MessageMilestones.recordReport(outcome, into: db)
    }

    private static let insertOutcome = HotSQL("""
        INSERT INTO outcomes(message_id, device_token, status, provider_message_id, reason, at, http_status, attempts, environment,
                             not_before)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
        ON CONFLICT DO NOTHING
        """)

    /// The event of an outcome just recorded (`EventRows.outcomeKind` and
    /// `outcomeReason` of its status, as schema v12's trigger wrote it).
    private static func appendEvent(of outcome: DeviceOutcome, subject: EventSubject?, into db: Database) throws {
        try db.run(subject == nil ? outcomeEventLookingUp : outcomeEvent) {
            try $0.bind(outcome.at, at: 2)
            try $0.bind(outcome.kind.rawValue, at: 3)
            try $0.bind(outcome.messageID, at: 4)
            try $0.bind(outcome.deviceToken, at: 9)
            try $0.bind(outcome.reason, at: 10)
            try $0.bind(outcome.httpStatus.map(Int64.init), at: 11)
            if let subject {
                try $0.bind(subject.bundleID, at: 1)
                try $0.bind(subject.idempotencyKey, at: 5)
                try $0.bind(subject.userID, at: 6)
                try $0.bind(subject.campaignID, at: 7)
                try $0.bind(subject.platform.rawValue, at: 8)
            }
        }
    }

    private static let outcomeEventColumns = """
        bundle_id, at, kind, message_id, idempotency_key, user_id, campaign_id, platform, device_token, reason, http_status
        """

    /// ?1…?11 in `outcomeEventColumns`' order, ?3 the outcome's status and
    /// ?10 its reason.
    private static let outcomeEvent = HotSQL("""
        INSERT INTO events(\(outcomeEventColumns))
        VALUES (?1, ?2, \(EventRows.outcomeKind(status: "?3")), ?4, ?5, ?6, ?7, ?8, ?9,
                \(EventRows.outcomeReason(status: "?3", reason: "?10")), ?11)
        """)

    /// `outcomeEvent` with the message's columns read from its row (?4).
    private static let outcomeEventLookingUp = HotSQL("""
        \(insertEventOfMessage(at: "?2", status: "?3", deviceToken: "?9", reason: "?10", httpStatus: "?11"))
        FROM messages m WHERE m.id = ?4
        """)

    /// The events of the outcomes with a rowid above `after`, in their order
    /// (`recoverInterrupted`'s UNCONFIRMED devices, inserted in one statement).
    static func appendEvents(ofOutcomesAfter after: Int64, into db: Database) throws {
        try db.run("""
            \(insertEventOfMessage(at: "o.at", status: "o.status", deviceToken: "o.device_token", reason: "o.reason",
                                   httpStatus: "o.http_status"))
            FROM outcomes o JOIN messages m ON m.id = o.message_id
            WHERE o.rowid > ?1 ORDER BY o.rowid
            """) { try $0.bind(after, at: 1) }
    }

    /// An outcome's event whose message columns come from `messages m`, the
    /// outcome's from the expressions given; the caller adds FROM and WHERE.
    private static func insertEventOfMessage(
        at: String, status: String, deviceToken: String, reason: String, httpStatus: String
    ) -> String {
        """
        INSERT INTO events(\(outcomeEventColumns))
        SELECT m.bundle_id, \(at), \(EventRows.outcomeKind(status: status)), m.id, m.idempotency_key, m.user_id, m.campaign_id,
               m.platform, \(deviceToken), \(EventRows.outcomeReason(status: status, reason: reason)), \(httpStatus)
        """
    }

    public func outcomes(messageID: String) async throws -> [DeviceOutcome] {
        try read { db in
            let statement = try db.cached("""
                SELECT message_id, device_token, status, provider_message_id, reason, at, not_before
                FROM outcomes WHERE message_id = ?1 ORDER BY rowid
                """)
            try statement.bind(messageID, at: 1)
            var outcomes: [DeviceOutcome] = []
            while try statement.step() {
                outcomes.append(DeviceOutcome(
                    messageID: statement.string(0), deviceToken: statement.string(1),
                    kind: DeviceOutcomeKind(rawValue: statement.string(2)), providerMessageID: statement.optionalString(3),
                    reason: statement.optionalString(4), at: statement.int64(5), notBefore: statement.optionalInt64(6)))
            }
            return outcomes
        }
    }

    private static let insertMark = HotSQL("INSERT OR IGNORE INTO handovers(message_id, device_token, push, at) VALUES (?1, ?2, ?3, ?4)")

    public func recordHandOvers(_ marks: [HandOverMark]) async throws {
        guard !marks.isEmpty else { return }
        try await write { db in
            let statement = try db.cached(Self.insertMark)
            for mark in marks {
                statement.reset()
                try statement.bind(mark.messageID, at: 1)
                try statement.bind(mark.deviceToken, at: 2)
                try statement.bind(mark.push, at: 3)
                try statement.bind(mark.at, at: 4)
                try statement.run()
            }
        }
    }

    public func handOvers(messageID: String, push: Int64) async throws -> [String] {
        try read { db in
            let statement = try db.cached("SELECT device_token FROM handovers WHERE message_id = ?1 AND push = ?2")
            try statement.bind(messageID, at: 1)
            try statement.bind(push, at: 2)
            var tokens: [String] = []
            while try statement.step() { tokens.append(statement.string(0)) }
            return tokens
        }
    }

    public func releaseClaim(id: String, now: Int64) async throws -> Bool {
        try await write { db in try MessageRows.release(db, id: id, now: now) }
    }

    /// Devices handed over without an answer get UNCONFIRMED; then every
    /// claim is released (see `MessageRows.release`), in one transaction.
    public func recoverInterrupted(now: Int64) async throws -> InterruptedRecovery {
        try await write { db in
            let lastOutcome = try db.scalarInt("SELECT coalesce(max(rowid), 0) FROM outcomes") ?? 0
            let unconfirm = try db.cached("""
                INSERT INTO outcomes(message_id, device_token, status, provider_message_id, reason, at)
                SELECT h.message_id, h.device_token, ?2, NULL, ?3, ?1
                FROM messages m JOIN handovers h ON h.message_id = m.id AND h.push = m.push_started_at
                WHERE m.sending_since IS NOT NULL AND NOT EXISTS (
                    SELECT 1 FROM outcomes o
                    WHERE o.message_id = h.message_id AND o.device_token = h.device_token AND o.at >= m.push_started_at
                      AND o.status <> 'waiting')
                """)
            try unconfirm.bind(now, at: 1)
            try unconfirm.bind(DeviceOutcomeKind.unconfirmed.rawValue, at: 2)
            try unconfirm.bind(DeviceOutcomeKind.unconfirmedReason, at: 3)
            try unconfirm.run()
            let unconfirmed = db.changes
            if unconfirmed > 0 { try Self.appendEvents(ofOutcomesAfter: lastOutcome, into: db) }
            let release = try db.cached(MessageRows.release + " RETURNING id")
            try release.bind(now, at: 1)
            var ids: [String] = []
            while try release.step() { ids.append(release.string(0)) }
            return InterruptedRecovery(resumed: ids, unconfirmedDevices: unconfirmed)
        }
    }

    public func pendingRevokes() async throws -> [PendingRevoke] {
        try read { db in
            let statement = try db.cached("SELECT message_id, due_at FROM revokes ORDER BY due_at, message_id")
            var revokes: [PendingRevoke] = []
            while try statement.step() {
                revokes.append(PendingRevoke(messageID: statement.string(0), dueAt: statement.int64(1)))
            }
            return revokes
        }
    }

    public func completeRevoke(messageID: String) async throws {
        try await write { db in
            try db.run("DELETE FROM revokes WHERE message_id = ?1") { try $0.bind(messageID, at: 1) }
        }
    }

    // MARK: Operators

    public func countsByState() async throws -> [MessageState: Int] {
        try read { db in
            let statement = try db.cached("SELECT state, n FROM state_counts WHERE n > 0")
            var counts: [MessageState: Int] = [:]
            while try statement.step() {
                counts[try MessageRows.state(statement.string(0))] = statement.int(1)
            }
            return counts
        }
    }

    public func oldestDue(now: Int64) async throws -> Int64? {
        try read { db in
            let statement = try db.cached("""
                SELECT min(due_at) FROM messages
                WHERE state IN ('scheduled', 'handed_off') AND sending_since IS NULL AND due_at <= ?1
                """)
            try statement.bind(now, at: 1)
            return try statement.step() ? statement.optionalInt64(0) : nil
        }
    }
}
