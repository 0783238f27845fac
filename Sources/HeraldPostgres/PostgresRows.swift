import HeraldCore
import HeraldStorage
import NIOCore
import PostgresNIO

/// Row mapping for `messages` (the column order of SQLite's `MessageRows`).
enum PostgresRows {
    /// Columns 0…19, then the request (20) and `transactional` (21).
    static let columns = """
        id, bundle_id, platform, user_id, campaign_id, idempotency_key, delivery_method, ab_test, \
        window_start, window_end, due_at, state, created_at, updated_at, attempts, last_error, provider_message_id, \
        sending_since, send_started_at, push_started_at, request, transactional
        """

    /// The same without the request (an empty one in its place), then the
    /// milestones (22…25): the read side.
    static let summaryColumns = """
        id, bundle_id, platform, user_id, campaign_id, idempotency_key, delivery_method, ab_test, \
        window_start, window_end, due_at, state, created_at, updated_at, attempts, last_error, provider_message_id, \
        sending_since, send_started_at, push_started_at, ''::bytea, transactional, handed_off_at, sent_at, displayed_at, opened_at
        """

    static func message(_ row: PostgresRow) throws -> StoredMessage {
        let r = row.makeRandomAccess()
        let id = try r[0].decode(String.self)
        let platformText = try r[2].decode(String.self), methodText = try r[6].decode(String.self)
        guard let platform = Platform(rawValue: platformText) else {
            throw StoreError.invalidRecord("message \(id): unknown platform \(platformText)")
        }
        guard let method = DeliveryMethod(rawValue: methodText) else {
            throw StoreError.invalidRecord("message \(id): unknown delivery method \(methodText)")
        }
        var request = try r[20].decode(ByteBuffer.self)
        return StoredMessage(
            id: id, bundleID: try r[1].decode(String.self), platform: platform, userID: try r[3].decode(String.self),
            campaignID: try r[4].decode(String.self), idempotencyKey: try r[5].decode(String?.self),
            deliveryMethod: method, abTest: try r[7].decode(Bool.self),
            windowStart: try r[8].decode(Int64.self), windowEnd: try r[9].decode(Int64.self),
            dueAt: try r[10].decode(Int64.self), state: try state(try r[11].decode(String.self)),
            request: request.readBytes(length: request.readableBytes) ?? [],
            createdAt: try r[12].decode(Int64.self), updatedAt: try r[13].decode(Int64.self),
            attempts: try r[14].decode(Int.self), lastError: try r[15].decode(String?.self),
            providerMessageID: try r[16].decode(String?.self), sendingSince: try r[17].decode(Int64?.self),
            sendStartedAt: try r[18].decode(Int64?.self), pushStartedAt: try r[19].decode(Int64?.self),
            transactional: try r[21].decode(Bool.self))
    }

    static func milestones(_ row: PostgresRow) throws -> MessageMilestones {
        let r = row.makeRandomAccess()
        return MessageMilestones(
            handedOffAt: try r[22].decode(Int64?.self), sentAt: try r[23].decode(Int64?.self),
            displayedAt: try r[24].decode(Int64?.self), openedAt: try r[25].decode(Int64?.self))
    }

    static func state(_ text: String) throws -> MessageState {
        guard let state = MessageState(rawValue: text) else {
            throw StoreError.invalidRecord("unknown message state \(text)")
        }
        return state
    }

    /// Inserts `m` (the caller's transaction).
    static func insert(_ connection: PostgresConnection, _ m: StoredMessage, logger: Logger) async throws {
        let request = ByteBuffer(bytes: m.request)
        try await connection.query("""
            INSERT INTO messages(\(unescaped: columns))
            VALUES (\(m.id), \(m.bundleID), \(m.platform.rawValue), \(m.userID), \(m.campaignID), \(m.idempotencyKey),
                    \(m.deliveryMethod.rawValue), \(m.abTest), \(m.windowStart), \(m.windowEnd), \(m.dueAt),
                    \(m.state.rawValue), \(m.createdAt), \(m.updatedAt), \(Int32(clamping: m.attempts)), \(m.lastError),
                    \(m.providerMessageID), \(m.sendingSince), \(m.sendStartedAt), \(m.pushStartedAt), \(request),
                    \(m.transactional))
            """, logger: logger)
    }

    /// Records many devices' results (none of them DISPLAYED or OPENED: no
    /// milestone to stamp) in one statement, in order; 1,000 to a statement.
    static func insert(_ connection: PostgresConnection, _ outcomes: [DeviceOutcome], logger: Logger) async throws {
        var start = 0
        while start < outcomes.count {
            let chunk = outcomes[start..<min(start + 1_000, outcomes.count)]
            start += chunk.count
            let query = BoundRows.query("""
                INSERT INTO outcomes(message_id, device_token, status, provider_message_id, reason, at, http_status, attempts, environment,
                                     not_before) VALUES
                """, chunk, perRow: 10) { outcome, row in
                precondition(outcome.kind != .displayed && outcome.kind != .opened, "a milestone to stamp: insert one by one")
                row.bind(outcome.messageID); row.bind(outcome.deviceToken); row.bind(outcome.kind.rawValue)
                row.bind(outcome.providerMessageID); row.bind(outcome.reason); row.bind(outcome.at)
                row.bind(outcome.httpStatus.map { Int32(clamping: $0) }); row.bind(outcome.attempts.map { Int32(clamping: $0) })
                row.bind(outcome.environment?.rawValue); row.bind(outcome.notBefore)
            }
            try await connection.query(query, logger: logger)
        }
    }

    /// Records one device's result, and stamps the message's milestone for
    /// the app's DISPLAYED / OPENED reports (the first one wins). A report
    /// already recorded for (message, device) adds no row (schema v4).
    static func insert(_ connection: PostgresConnection, _ outcome: DeviceOutcome, logger: Logger) async throws {
        try await connection.query("""
            INSERT INTO outcomes(message_id, device_token, status, provider_message_id, reason, at, http_status, attempts, environment,
                                 not_before)
            VALUES (\(outcome.messageID), \(outcome.deviceToken), \(outcome.kind.rawValue), \(outcome.providerMessageID),
                    \(outcome.reason), \(outcome.at), \(outcome.httpStatus.map { Int32(clamping: $0) }),
                    \(outcome.attempts.map { Int32(clamping: $0) }), \(outcome.environment?.rawValue), \(outcome.notBefore))
            ON CONFLICT DO NOTHING
            """, logger: logger)
        switch outcome.kind {
        case .displayed:
            try await connection.query(
                "UPDATE messages SET displayed_at = coalesce(displayed_at, \(outcome.at)) WHERE id = \(outcome.messageID)",
                logger: logger)
        case .opened:
            try await connection.query(
                "UPDATE messages SET opened_at = coalesce(opened_at, \(outcome.at)) WHERE id = \(outcome.messageID)",
                logger: logger)
        default:
            break
        }
    }

    static func outcome(_ row: PostgresRow) throws -> DeviceOutcome {
        let r = row.makeRandomAccess()
        return DeviceOutcome(
            messageID: try r[0].decode(String.self), deviceToken: try r[1].decode(String.self),
            kind: DeviceOutcomeKind(rawValue: try r[2].decode(String.self)), providerMessageID: try r[3].decode(String?.self),
            reason: try r[4].decode(String?.self), at: try r[5].decode(Int64.self),
            httpStatus: try r[6].decode(Int?.self), attempts: try r[7].decode(Int?.self),
            environment: try r[8].decode(String?.self).flatMap(APNsEnvironment.init(rawValue:)),
            notBefore: try r[9].decode(Int64?.self))
    }
}

extension PostgresStore {
    /// Inserts many messages (with their keys) in one transaction, without
    /// last-request-wins checks: seeding tests and benchmarks (keys must be
    /// unique). Rows go 1,000 to a statement (22 parameters each).
    func importMessages(_ messages: [StoredMessage]) async throws {
        try await transaction { connection in
            var start = 0
            while start < messages.count {
                let chunk = Array(messages[start..<min(start + 1_000, messages.count)])
                start += chunk.count
                try await Self.insertMessages(connection, chunk, logger: self.logger)
                try await connection.query("""
                    INSERT INTO message_keys(bundle_id, idempotency_key, message_id)
                    SELECT bundle_id, idempotency_key, id FROM messages
                    WHERE id = ANY(\(chunk.map(\.id))) AND idempotency_key IS NOT NULL
                    """, logger: self.logger)
            }
        }
    }

    /// Inserts `messages` (at most 2,900: 22 parameters each) in one
    /// statement, on the caller's transaction.
    static func insertMessages(_ connection: PostgresConnection, _ messages: [StoredMessage], logger: Logger) async throws {
        guard !messages.isEmpty else { return }
        if messages.allSatisfy(\.isFresh) {
            return try await insertFresh(connection, messages, logger: logger)
        }
        precondition(messages.count <= 2_900, "65,535 bound parameters at most")
        let query = BoundRows.query("INSERT INTO messages(\(PostgresRows.columns)) VALUES", messages, perRow: 22) { m, row in
            row.bind(m.id); row.bind(m.bundleID); row.bind(m.platform.rawValue); row.bind(m.userID); row.bind(m.campaignID)
            row.bind(m.idempotencyKey); row.bind(m.deliveryMethod.rawValue); row.bind(m.abTest); row.bind(m.windowStart)
            row.bind(m.windowEnd); row.bind(m.dueAt); row.bind(m.state.rawValue); row.bind(m.createdAt); row.bind(m.updatedAt)
            row.bind(Int32(clamping: m.attempts)); row.bind(m.lastError); row.bind(m.providerMessageID); row.bind(m.sendingSince)
            row.bind(m.sendStartedAt); row.bind(m.pushStartedAt); row.bind(ByteBuffer(bytes: m.request))
            row.bind(m.transactional)
        }
        try await connection.query(query, logger: logger)
    }
}

extension PostgresStore {
    /// Messages as Schedule makes them (no claim, no error, no provider message id, a
    /// key that is absent or non-empty) in one statement of a fixed text
    /// over 17 arrays: PostgreSQL parses and plans it in constant time,
    /// where the `VALUES` list of 21 parameters per row cost ~20 % of its
    /// CPU per Schedule (parse and plan grow with the rows).
    static func insertFresh(_ connection: PostgresConnection, _ messages: [StoredMessage], logger: Logger) async throws {
        try await connection.query("""
            INSERT INTO messages(\(unescaped: PostgresRows.columns))
            SELECT id, b, p, u, c, NULLIF(k, ''), dm, ab, ws, we, due, st, ca, ua, att, NULL, NULL, NULL, NULL, NULL, r, tx
            FROM unnest(\(messages.map(\.id))::text[], \(messages.map(\.bundleID))::text[],
                        \(messages.map(\.platform.rawValue))::text[], \(messages.map(\.userID))::text[],
                        \(messages.map(\.campaignID))::text[], \(messages.map { $0.idempotencyKey ?? "" })::text[],
                        \(messages.map(\.deliveryMethod.rawValue))::text[], \(messages.map(\.abTest))::boolean[],
                        \(messages.map(\.windowStart))::bigint[], \(messages.map(\.windowEnd))::bigint[],
                        \(messages.map(\.dueAt))::bigint[], \(messages.map(\.state.rawValue))::text[],
                        \(messages.map(\.createdAt))::bigint[], \(messages.map(\.updatedAt))::bigint[],
                        \(messages.map { Int32(clamping: $0.attempts) })::integer[],
                        \(messages.map { ByteBuffer(bytes: $0.request) })::bytea[],
                        \(messages.map(\.transactional))::boolean[])
                AS t(id, b, p, u, c, k, dm, ab, ws, we, due, st, ca, ua, att, r, tx)
            """, logger: logger)
    }
}

extension StoredMessage {
    /// Nothing but what Schedule writes (see `PostgresStore.insertFresh`).
    var isFresh: Bool {
        lastError == nil && providerMessageID == nil && sendingSince == nil && sendStartedAt == nil && pushStartedAt == nil
            && idempotencyKey?.isEmpty != true
    }
}

/// A multi-row `VALUES` list of bound parameters (`PostgresRows`' batch
/// inserts): `head`, then one parenthesized row per element, each value a
/// bound parameter, never SQL text.
struct BoundRows {
    private var sql: PostgresQuery.StringInterpolation
    private var first = true

    private init(_ sql: PostgresQuery.StringInterpolation) { self.sql = sql }

    /// `head (…), (…)`: `fill` binds each element's `perRow` values in column order.
    static func query<Rows: Collection>(
        _ head: String, _ rows: Rows, perRow: Int, _ fill: (Rows.Element, inout BoundRows) -> Void
    ) -> PostgresQuery {
        var sql = PostgresQuery.StringInterpolation(literalCapacity: head.utf8.count + 8 * perRow * rows.count,
                                                    interpolationCount: perRow * rows.count)
        sql.appendLiteral(head)
        var row = BoundRows(sql)
        for (index, element) in rows.enumerated() {
            row.sql.appendLiteral(index == 0 ? " (" : ", (")
            row.first = true
            fill(element, &row)
            row.sql.appendLiteral(")")
        }
        return PostgresQuery(stringInterpolation: row.sql)
    }

    mutating func bind<Value: PostgresDynamicTypeEncodable>(_ value: Value) {
        separate()
        sql.appendInterpolation(value)
    }

    mutating func bind<Value: PostgresDynamicTypeEncodable>(_ value: Value?) {
        separate()
        sql.appendInterpolation(value)
    }

    private mutating func separate() {
        if !first { sql.appendLiteral(", ") }
        first = false
    }
}
