public import HeraldCore
public import HeraldStorage
import PostgresNIO

extension PostgresStore {
    // MARK: Messages (API)

    /// Last request wins through `message_keys`, as in SQLite, made safe for
    /// concurrent Schedules of one key on any replica by row locks (see
    /// `schedule(_:_:logger:)`). Concurrent Schedules share transactions
    /// (`PostgresBatcher`: group commit).
    public func schedule(_ message: StoredMessage, deadline: ContinuousClock.Instant?) async throws -> ScheduleOutcome {
        try await scheduleWrites.run(message, deadline: deadline, writer: ScheduleWrites(store: self))
    }

    /// One Schedule in its own transaction.
    func scheduleOne(_ message: StoredMessage, deadline: ContinuousClock.Instant?) async throws -> ScheduleOutcome {
        do {
            return try await transaction { connection in
                // The deadline rule, once a connection is ours: before any write.
                if Task.isCancelled { throw StoreError.abandoned }
                if let deadline, ContinuousClock.now >= deadline { throw StoreError.abandoned }
                return try await Self.schedule(message, connection, logger: self.logger)
            }
        } catch is CancellationError {
            // Cancelled while waiting for a connection: nothing was written.
            throw StoreError.abandoned
        }
    }

    /// Many Schedules in one transaction: the free keys are taken in one
    /// statement (in key order, so concurrent batches lock keys in one
    /// order), their messages and the keyless ones inserted in one more;
    /// each Schedule whose key was taken already then goes the one-by-one
    /// way (`schedule(_:_:logger:)`), in key order and, for one key, in
    /// arrival order (the last request wins). `nil`: past its deadline.
    func scheduleBatch(
        _ batch: [(message: StoredMessage, deadline: ContinuousClock.Instant?)]
    ) async throws -> [ScheduleOutcome?] {
        try await transaction { connection in
            let now = ContinuousClock.now
            let live = batch.indices.filter { batch[$0].deadline.map { now < $0 } ?? true }
            let keyed = live.filter { batch[$0].message.idempotencyKey != nil }
            var took = Set<String>()
            if !keyed.isEmpty {
                let messages = keyed.map { batch[$0].message }
                took = Set(try await Self.rows(connection, """
                    INSERT INTO message_keys(bundle_id, idempotency_key, message_id)
                    SELECT b, k, m FROM unnest(\(messages.map(\.bundleID))::text[],
                                              \(messages.map { $0.idempotencyKey ?? "" })::text[],
                                              \(messages.map(\.id))::text[]) WITH ORDINALITY AS t(b, k, m, n)
                    ORDER BY b, k, n
                    ON CONFLICT (bundle_id, idempotency_key) DO NOTHING RETURNING message_id
                    """, logger: self.logger) { try $0.decode(String.self) })
            }
            let direct = live.filter { batch[$0].message.idempotencyKey == nil || took.contains(batch[$0].message.id) }
            try await Self.insertMessages(connection, direct.map { batch[$0].message }, logger: self.logger)
            var outcomes = [ScheduleOutcome?](repeating: nil, count: batch.count)
            for index in direct { outcomes[index] = .scheduled(batch[index].message, supersededID: nil) }
            let rest = keyed.filter { !took.contains(batch[$0].message.id) }.sorted {
                let (a, b) = (batch[$0].message, batch[$1].message)
                return (a.bundleID, a.idempotencyKey ?? "", $0) < (b.bundleID, b.idempotencyKey ?? "", $1)
            }
            for index in rest { outcomes[index] = try await Self.schedule(batch[index].message, connection, logger: self.logger) }
            return outcomes
        }
    }

    /// One Schedule on `connection` (the caller's transaction):
    /// 1. `INSERT … ON CONFLICT DO NOTHING` takes a free key (a concurrent
    ///    taker of the same key waits for this transaction, then conflicts);
    /// 2. a taken key's row is locked (`FOR UPDATE`), then its message's
    ///    row (the claim's compare-and-set locks it too), so the supersede
    ///    or ALREADY_EXISTS decision reads committed, current rows.
    /// A key deleted meanwhile (retention) is taken again (step 1).
    static func schedule(_ message: StoredMessage, _ connection: PostgresConnection, logger: Logger) async throws -> ScheduleOutcome {
        guard let key = message.idempotencyKey else {
            try await PostgresRows.insert(connection, message, logger: logger)
            return .scheduled(message, supersededID: nil)
        }
        for _ in 0..<8 {
            let took = try await first(connection, """
                INSERT INTO message_keys(bundle_id, idempotency_key, message_id)
                VALUES (\(message.bundleID), \(key), \(message.id))
                ON CONFLICT (bundle_id, idempotency_key) DO NOTHING RETURNING 1
                """, logger: logger) { _ in true } ?? false
            if took {
                try await PostgresRows.insert(connection, message, logger: logger)
                return .scheduled(message, supersededID: nil)
            }
            guard let holder = try await first(connection, """
                SELECT message_id FROM message_keys
                WHERE bundle_id = \(message.bundleID) AND idempotency_key = \(key) FOR UPDATE
                """, logger: logger, { try $0.decode(String.self) }) else { continue }
            guard let existing = try await first(connection, """
                SELECT \(unescaped: PostgresRows.columns) FROM messages WHERE id = \(holder) FOR UPDATE
                """, logger: logger, PostgresRows.message) else {
                throw StoreError.invalidRecord("key \(key) of \(message.bundleID) names a missing message \(holder)")
            }
            if existing.keySpent { return .alreadyExists(existing) }
            var supersededID: String?
            if existing.state == .scheduled {
                try check(id: existing.id, from: .scheduled, to: .superseded)
                try await connection.query("""
                    UPDATE messages SET state = 'superseded', updated_at = \(message.createdAt)
                    WHERE id = \(existing.id) AND state = 'scheduled'
                    """, logger: logger)
                supersededID = existing.id
            }
            try await PostgresRows.insert(connection, message, logger: logger)
            try await connection.query("""
                UPDATE message_keys SET message_id = \(message.id)
                WHERE bundle_id = \(message.bundleID) AND idempotency_key = \(key)
                """, logger: logger)
            return .scheduled(message, supersededID: supersededID)
        }
        throw StoreError.database("the key \(key) kept changing under this Schedule; nothing was stored")
    }

    public func cancel(
        bundleID: String, platform: Platform, userID: String, campaignID: String,
        idempotencyKey: String, now: Int64
    ) async throws -> CancelOutcome {
        try await transaction { connection in
            guard let holder = try await Self.first(connection, """
                SELECT message_id FROM message_keys
                WHERE bundle_id = \(bundleID) AND idempotency_key = \(idempotencyKey) FOR UPDATE
                """, logger: self.logger, { try $0.decode(String.self) }),
                var message = try await Self.first(connection, """
                    SELECT \(unescaped: PostgresRows.columns) FROM messages WHERE id = \(holder) FOR UPDATE
                    """, logger: self.logger, PostgresRows.message),
                message.platform == platform, message.userID == userID, message.campaignID == campaignID
            else { return .notFound }
            if message.isSending { return .notCancelled(message) }
            switch message.state {
            case .cancelled:
                return .cancelled(message, revokeDue: false)
            case .scheduled, .handedOff:
                let handedOff = message.state == .handedOff
                try Self.check(id: message.id, from: message.state, to: .cancelled)
                try await connection.query("""
                    UPDATE messages SET state = 'cancelled', updated_at = \(now)
                    WHERE id = \(message.id) AND state = \(message.state.rawValue)
                    """, logger: self.logger)
                if handedOff {
                    try await connection.query("""
                        INSERT INTO revokes(message_id, due_at) VALUES (\(message.id), \(now)) ON CONFLICT DO NOTHING
                        """, logger: self.logger)
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
        try await connection { connection in
            try await Self.first(connection, "SELECT \(unescaped: PostgresRows.columns) FROM messages WHERE id = \(id)",
                                 logger: self.logger, PostgresRows.message)
        }
    }

    public func message(bundleID: String, idempotencyKey: String) async throws -> StoredMessage? {
        try await connection { connection in
            try await Self.first(connection, """
                SELECT \(unescaped: PostgresRows.columns) FROM messages
                WHERE id = (SELECT message_id FROM message_keys WHERE bundle_id = \(bundleID) AND idempotency_key = \(idempotencyKey))
                """, logger: self.logger, PostgresRows.message)
        }
    }

    // MARK: Scheduler and dispatcher

    public func due(before: Int64, limit: Int) async throws -> [StoredMessage] {
        try await connection { connection in
            try await Self.rows(connection, """
                SELECT \(unescaped: PostgresRows.columns) FROM messages
                WHERE state IN ('scheduled', 'handed_off') AND sending_since IS NULL AND due_at <= \(before)
                ORDER BY due_at, id LIMIT \(limit)
                """, logger: self.logger, PostgresRows.message)
        }
    }

    public func pending(after cursor: PendingCursor?, limit: Int) async throws -> [PendingEntry] {
        try await connection { connection in
            let query: PostgresQuery
            if let cursor {
                query = """
                    SELECT id, due_at, state, bundle_id, transactional FROM messages
                    WHERE state IN ('scheduled', 'handed_off') AND sending_since IS NULL
                      AND (due_at, id) > (\(cursor.dueAt), \(cursor.id))
                    ORDER BY due_at, id LIMIT \(limit)
                    """
            } else {
                query = """
                    SELECT id, due_at, state, bundle_id, transactional FROM messages
                    WHERE state IN ('scheduled', 'handed_off') AND sending_since IS NULL
                    ORDER BY due_at, id LIMIT \(limit)
                    """
            }
            return try await Self.rows(connection, query, logger: self.logger) { row in
                let (id, dueAt, state, bundleID, transactional) = try row.decode((String, Int64, String, String, Bool).self)
                return PendingEntry(id: id, dueAt: dueAt, state: try PostgresRows.state(state), bundleID: bundleID,
                                    transactional: transactional)
            }
        }
    }

    /// A compare-and-set on the row (`state = from AND sending_since IS
    /// NULL`): of concurrent claims on any replicas exactly one changes it;
    /// the others find it changed and get nil. Records this replica as the
    /// owner and the lease's end.
    public func claim(id: String, from: MessageState, now: Int64) async throws -> StoredMessage? {
        try Self.check(id: id, from: from, to: .sent)
        let leaseUntil = now + configuration.leaseMilliseconds
        return try await transaction { connection in
            try await Self.first(connection, """
                UPDATE messages
                SET sending_since = \(now), send_started_at = coalesce(send_started_at, \(now)),
                    push_started_at = coalesce(push_started_at, \(now)), attempts = attempts + 1, updated_at = \(now),
                    owner = \(self.configuration.replicaID), lease_until = \(leaseUntil)
                WHERE id = \(id) AND state = \(from.rawValue) AND sending_since IS NULL
                RETURNING \(unescaped: PostgresRows.columns)
                """, logger: self.logger, PostgresRows.message)
        }
    }

    static func check(id: String, from: MessageState, to: MessageState) throws(StoreError) {
        guard from.canTransition(to: to) else { throw .illegalTransition(from: from, to: to, id: id) }
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var text = self
        while text.first?.isWhitespace == true { text = text.dropFirst() }
        while text.last?.isWhitespace == true { text = text.dropLast() }
        return text
    }
}

/// `PostgresBatcher`'s view of the store for Schedule.
struct ScheduleWrites: BatchWriter {
    let store: PostgresStore

    func runBatch(_ batch: [(item: StoredMessage, deadline: ContinuousClock.Instant?)]) async throws -> [ScheduleOutcome?] {
        try await store.scheduleBatch(batch.map { (message: $0.item, deadline: $0.deadline) })
    }

    func runOne(_ item: StoredMessage, deadline: ContinuousClock.Instant?) async throws -> ScheduleOutcome {
        try await store.scheduleOne(item, deadline: deadline)
    }
}
