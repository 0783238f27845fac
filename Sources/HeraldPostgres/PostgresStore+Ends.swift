import HeraldCore
import HeraldStorage
import PostgresNIO

// Pushes' ends in one statement (the dispatcher's common case): the fenced
// UPDATE, the hand-over marks dropped and the outcomes recorded by one
// data-modifying WITH, committed on its own — one round trip instead of
// BEGIN, a locking SELECT, a DELETE, an INSERT, the UPDATE and COMMIT, and
// no row lock written before the update (the UPDATE's own lock is the fence).

extension PostgresStore {
    /// Whether `items` can end in one statement: each message named once (an
    /// UPDATE changes a row once), and no DISPLAYED / OPENED outcome (their
    /// milestones are stamped one by one), and no `notBefore` (a WAITING
    /// device's: the one statement does not write that column).
    static func endsInOneStatement(_ items: [Transition]) -> Bool {
        var named = Set<String>()
        named.reserveCapacity(items.count)
        for item in items {
            guard named.insert(item.id).inserted else { return false }
            if item.outcomes.contains(where: { $0.kind == .displayed || $0.kind == .opened || $0.notBefore != nil }) { return false }
        }
        return true
    }

    /// `transitions(_:)` for items that `endsInOneStatement` accepts: the ids
    /// whose state changed. The rules per item are the transaction's:
    /// - a message another replica owns (`owner`) is left alone — outcomes
    ///   and marks included — unless the change is to DISPLAYED (the app's
    ///   report applies from any replica);
    /// - otherwise the push ends: its marks are dropped and its outcomes
    ///   recorded, and the state moves on only while it is still `from`.
    /// The UPDATE decides for the messages it changes (rechecked on the row's
    /// latest version under its lock); `kept`, those allowed whose state
    /// moved on, are locked before their outcomes are written, as the
    /// transaction's locking read did. Rows are updated in id order (the
    /// lock order of every batched writer). A message that does not exist
    /// records nothing.
    func endPushes(_ connection: PostgresConnection, _ items: [Transition]) async throws -> Set<String> {
        var changed = Set<String>()
        for try await id in try await connection.execute(EndPushes(items, replicaID: configuration.replicaID), logger: logger) {
            changed.insert(id)
        }
        return changed
    }
}

/// `endPushes`' statement, prepared once per connection (its text, 6
/// CTEs, was parsed, analyzed and planned for every batch; the plan is the
/// same for any batch: nested loops over the arrays and the primary key).
/// Items go in id order (the UPDATE's lock order), outcomes in the batch's.
struct EndPushes: PostgresPreparedStatement {
    typealias Row = String

    static let sql = """
        WITH v AS (
            SELECT id, source, target, CASE WHEN has_due THEN due END AS due,
                   CASE WHEN has_apns THEN apns END AS apns, CASE WHEN has_err THEN err END AS err, at
            FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bool[], $6::text[], $7::bool[],
                        $8::text[], $9::bool[], $10::bigint[])
                 WITH ORDINALITY AS u(id, source, target, due, has_due, apns, has_apns, err, has_err, at, n)
            ORDER BY n
        ),
        changed AS (
            UPDATE messages AS m
            SET \(PostgresStore.endSet)
            FROM v
            WHERE m.id = v.id AND m.state = v.source
              AND (coalesce(m.owner, '') IN ('', $11::text) OR v.target = 'displayed')
            RETURNING m.id
        ),
        kept AS (
            SELECT m.id FROM messages AS m JOIN v ON v.id = m.id
            WHERE v.id NOT IN (SELECT id FROM changed)  -- on v: no index probe for the rows changed
              AND (coalesce(m.owner, '') IN ('', $11::text) OR v.target = 'displayed')
            ORDER BY m.id
            FOR UPDATE OF m
        ),
        ended AS MATERIALIZED (SELECT id FROM changed UNION ALL SELECT id FROM kept),
        dropped AS (DELETE FROM handovers WHERE message_id IN (SELECT id FROM ended)),
        recorded AS (
            INSERT INTO outcomes(message_id, device_token, status, provider_message_id, reason, at, http_status, attempts, environment)
            SELECT message_id, device_token, status, CASE WHEN has_apns THEN apns END,
                   CASE WHEN has_reason THEN reason END, at, CASE WHEN has_http THEN http END,
                   CASE WHEN has_attempts THEN attempts END, CASE WHEN has_env THEN env END
            FROM unnest($12::text[], $13::text[], $14::text[], $15::text[], $16::bool[], $17::text[], $18::bool[],
                        $19::bigint[], $20::integer[], $21::bool[], $22::integer[], $23::bool[], $24::text[], $25::bool[])
                 WITH ORDINALITY AS o(message_id, device_token, status, apns, has_apns, reason, has_reason, at,
                                      http, has_http, attempts, has_attempts, env, has_env, n)
            WHERE message_id IN (SELECT id FROM ended)
            ORDER BY n
        )
        SELECT id FROM changed
        """

    let items: [Transition]
    let outcomes: [DeviceOutcome]
    let replicaID: String

    init(_ items: [Transition], replicaID: String) {
        self.items = items.sorted { $0.id < $1.id }
        self.outcomes = items.flatMap(\.outcomes)
        self.replicaID = replicaID
    }

    func makeBindings() throws -> PostgresBindings {
        var b = PostgresBindings(capacity: 25)
        b.append(items.map(\.id)); b.append(items.map(\.from.rawValue)); b.append(items.map(\.to.rawValue))
        b.append(items.map { $0.dueAt ?? 0 }); b.append(items.map { $0.dueAt != nil })
        b.append(items.map { $0.providerMessageID ?? "" }); b.append(items.map { $0.providerMessageID != nil })
        b.append(items.map { $0.lastError ?? "" }); b.append(items.map { $0.lastError != nil })
        b.append(items.map(\.now))
        b.append(replicaID)
        b.append(outcomes.map(\.messageID)); b.append(outcomes.map(\.deviceToken)); b.append(outcomes.map(\.kind.rawValue))
        b.append(outcomes.map { $0.providerMessageID ?? "" }); b.append(outcomes.map { $0.providerMessageID != nil })
        b.append(outcomes.map { $0.reason ?? "" }); b.append(outcomes.map { $0.reason != nil })
        b.append(outcomes.map(\.at))
        b.append(outcomes.map { Int32(clamping: $0.httpStatus ?? 0) }); b.append(outcomes.map { $0.httpStatus != nil })
        b.append(outcomes.map { Int32(clamping: $0.attempts ?? 0) }); b.append(outcomes.map { $0.attempts != nil })
        b.append(outcomes.map { $0.environment?.rawValue ?? "" }); b.append(outcomes.map { $0.environment != nil })
        return b
    }

    func decodeRow(_ row: PostgresRow) throws -> String {
        try row.decode(String.self)
    }
}
