public import HeraldCore
public import HeraldStorage
import PostgresNIO

extension PostgresStore {
    /// Whether the message's open push handed anything over or got any
    /// final answer, WAITING not being one (SQLite's `MessageRows.release`
    /// rule, same text).
    static let pushTouched = """
        (EXISTS (SELECT 1 FROM handovers h WHERE h.message_id = messages.id AND h.push = messages.push_started_at) \
        OR EXISTS (SELECT 1 FROM outcomes o WHERE o.message_id = messages.id AND o.at >= messages.push_started_at \
        AND o.status <> 'waiting'))
        """

    /// SQLite's transition, fenced across replicas: a message claimed by
    /// another replica (`owner`, set by its claim) cannot be moved on by
    /// this one, so a replica that stalled past its lease and lost the claim
    /// cannot end a push the new owner is sending: its result loses
    /// (`false`, nothing recorded, the new owner's hand-over marks kept).
    /// The app's DISPLAYED report is the exception, applied by whichever
    /// replica receives it, as on SQLite (the claim holder's own transition
    /// then finds the state moved on). Concurrent transitions share one
    /// transaction (`PostgresBatcher`: one commit for many pushes' ends).
    public func transition(
        id: String, from: MessageState, to: MessageState, dueAt: Int64?,
        providerMessageID: String?, lastError: String?, now: Int64, recording outcomes: [DeviceOutcome]
    ) async throws -> Bool {
        // Before the write: a refused change records nothing, not even the outcomes.
        try Self.check(id: id, from: from, to: to)
        return try await transitionWrites.run(
            Transition(id: id, from: from, to: to, dueAt: dueAt, providerMessageID: providerMessageID, lastError: lastError, now: now,
                       outcomes: outcomes),
            writer: TransitionWrites(store: self))
    }

    /// Many transitions in one transaction, in order, each fenced as
    /// `transition`; whether each applied. Checked first: an illegal item
    /// writes nothing.
    public func transitions(_ items: [Transition]) async throws -> [Bool] {
        guard !items.isEmpty else { return [] }
        for item in items { try Self.check(id: item.id, from: item.from, to: item.to) }
        if Self.endsInOneStatement(items) {
            let changed = try await autocommit { connection in try await self.endPushes(connection, items) }
            return items.map { changed.contains($0.id) }
        }
        return try await transaction { connection in
            // The fence, under the rows' locks (taken in id order; the rows as
            // the updates will see them): whatever its state, a claim of
            // another replica's is left alone, its outcomes and its
            // hand-over marks included.
            var owners: [String: String] = [:]
            for try await (id, owner) in try await connection.query("""
                SELECT id, coalesce(owner, '') FROM messages WHERE id = ANY(\(items.map(\.id))::text[])
                ORDER BY id FOR UPDATE
                """, logger: self.logger).decode((String, String).self) {
                owners[id] = owner
            }
            // A message that does not exist records nothing.
            let allowed = items.map { item in
                guard let owner = owners[item.id] else { return false }
                return owner.isEmpty || owner == self.configuration.replicaID || item.to == .displayed
            }
            // The pushes end: their marks served their purpose.
            let ending = zip(items, allowed).filter(\.1).map(\.0.id)
            guard !ending.isEmpty else { return allowed }
            try await connection.query("DELETE FROM handovers WHERE message_id = ANY(\(ending)::text[])", logger: self.logger)
            // Every allowed item's outcomes in one statement, in order (the
            // app's DISPLAYED / OPENED reports stamp a milestone: one by one).
            let outcomes = zip(items, allowed).filter(\.1).flatMap(\.0.outcomes)
            if outcomes.contains(where: { $0.kind == .displayed || $0.kind == .opened }) {
                for outcome in outcomes { try await PostgresRows.insert(connection, outcome, logger: self.logger) }
            } else {
                try await PostgresRows.insert(connection, outcomes, logger: self.logger)
            }
            // One UPDATE per round: UPDATE … FROM applies one source row per
            // message, so a message named twice in the batch (rare) goes in
            // the next round, after its earlier transition.
            var applied = [Bool](repeating: false, count: items.count)
            var rest = items.indices.filter { allowed[$0] }
            while !rest.isEmpty {
                var named = Set<String>(), round: [Int] = [], later: [Int] = []
                for index in rest {
                    if named.insert(items[index].id).inserted { round.append(index) } else { later.append(index) }
                }
                let changed = try await Self.update(connection, round.map { items[$0] }, logger: self.logger)
                for index in round { applied[index] = changed.contains(items[index].id) }
                rest = later
            }
            return applied
        }
    }

    /// A push's end on `messages AS m` from the row `v` (target, due, apns,
    /// err, at; a NULL value leaves its column), clearing the claim and
    /// stamping the milestone: the transaction's UPDATE and `EndPushes`'.
    static let endSet = """
        state = v.target, due_at = coalesce(v.due, m.due_at), provider_message_id = coalesce(v.apns, m.provider_message_id), \
        last_error = coalesce(v.err, m.last_error), sending_since = NULL, push_started_at = NULL, \
        owner = NULL, lease_until = NULL, updated_at = v.at, \
        handed_off_at = CASE WHEN v.target = 'handed_off' THEN coalesce(m.handed_off_at, v.at) ELSE m.handed_off_at END, \
        sent_at = CASE WHEN v.target = 'sent' THEN coalesce(m.sent_at, v.at) ELSE m.sent_at END, \
        displayed_at = CASE WHEN v.target = 'displayed' THEN coalesce(m.displayed_at, v.at) ELSE m.displayed_at END
        """

    /// Moves each of `batch` (each message once) on in one statement; the
    /// ids of those whose `from` state still held. A nil value leaves its
    /// column as it was.
    private static func update(_ connection: PostgresConnection, _ batch: [Transition], logger: Logger) async throws -> Set<String> {
        Set(try await rows(connection, """
            UPDATE messages AS m
            SET \(unescaped: Self.endSet)
            FROM (SELECT id, source, target, CASE WHEN has_due THEN due END AS due,
                         CASE WHEN has_apns THEN apns END AS apns, CASE WHEN has_err THEN err END AS err, at
                  FROM unnest(\(batch.map(\.id))::text[], \(batch.map(\.from.rawValue))::text[],
                              \(batch.map(\.to.rawValue))::text[], \(batch.map { $0.dueAt ?? 0 })::bigint[],
                              \(batch.map { $0.dueAt != nil })::bool[], \(batch.map { $0.providerMessageID ?? "" })::text[],
                              \(batch.map { $0.providerMessageID != nil })::bool[], \(batch.map { $0.lastError ?? "" })::text[],
                              \(batch.map { $0.lastError != nil })::bool[], \(batch.map(\.now))::bigint[])
                       AS u(id, source, target, due, has_due, apns, has_apns, err, has_err, at)) AS v
            WHERE m.id = v.id AND m.state = v.source
            RETURNING m.id
            """, logger: logger) { try $0.decode(String.self) })
    }

    /// No foreign key since schema v2: an outcome for a message that does
    /// not exist is refused here (`invalidRecord`), as SQLite's key refuses
    /// it; the row's KEY SHARE lock keeps retention from deleting the
    /// message meanwhile, as the key's check did.
    public func recordOutcome(_ outcome: DeviceOutcome) async throws {
        try await transaction { connection in
            guard try await Self.first(connection, """
                SELECT 1 FROM messages WHERE id = \(outcome.messageID) FOR KEY SHARE
                """, logger: self.logger, { _ in true }) != nil else {
                throw StoreError.invalidRecord("an outcome for message \(outcome.messageID), which does not exist")
            }
            try await PostgresRows.insert(connection, outcome, logger: self.logger)
        }
    }

    public func outcomes(messageID: String) async throws -> [DeviceOutcome] {
        try await connection { connection in
            try await Self.rows(connection, """
                SELECT message_id, device_token, status, provider_message_id, reason, at, NULL::integer, NULL::integer, NULL::text,
                       not_before
                FROM outcomes WHERE message_id = \(messageID) ORDER BY seq
                """, logger: self.logger, PostgresRows.outcome)
        }
    }

    public func recordHandOvers(_ marks: [HandOverMark]) async throws {
        guard !marks.isEmpty else { return }
        try await autocommit { connection in
            // One statement for the whole batch (committed on its own): arrays bound as parameters.
            _ = try await connection.query("""
                INSERT INTO handovers(message_id, device_token, push, at)
                SELECT * FROM unnest(\(marks.map(\.messageID))::text[], \(marks.map(\.deviceToken))::text[],
                                     \(marks.map(\.push))::bigint[], \(marks.map(\.at))::bigint[])
                ON CONFLICT DO NOTHING
                """, logger: self.logger)
        }
    }

    public func handOvers(messageID: String, push: Int64) async throws -> [String] {
        try await connection { connection in
            try await Self.rows(connection, """
                SELECT device_token FROM handovers WHERE message_id = \(messageID) AND push = \(push)
                ORDER BY device_token
                """, logger: self.logger) { try $0.decode(String.self) }
        }
    }

    public func releaseClaim(id: String, now: Int64) async throws -> Bool {
        try await autocommit { connection in
            try await Self.rows(connection, """
                UPDATE messages SET \(unescaped: Self.releaseSet), updated_at = \(now)
                WHERE sending_since IS NOT NULL AND id = \(id) RETURNING id
                """, logger: self.logger) { try $0.decode(String.self) }.count > 0
        }
    }

    /// SQLite's `MessageRows.release` (constant text, no values): the
    /// message waits again in its pre-claim state; a first claim with
    /// nothing handed over or answered unspends the key.
    static let releaseSet = """
        send_started_at = CASE WHEN send_started_at = sending_since AND NOT \(pushTouched) \
        THEN NULL ELSE send_started_at END, \
        push_started_at = CASE WHEN \(pushTouched) THEN push_started_at ELSE NULL END, \
        sending_since = NULL, owner = NULL, lease_until = NULL
        """

    public func pendingRevokes() async throws -> [PendingRevoke] {
        try await connection { connection in
            try await Self.rows(connection, "SELECT message_id, due_at FROM revokes ORDER BY due_at, message_id",
                                logger: self.logger) { row in
                let (id, dueAt) = try row.decode((String, Int64).self)
                return PendingRevoke(messageID: id, dueAt: dueAt)
            }
        }
    }

    public func completeRevoke(messageID: String) async throws {
        try await autocommit { connection in
            _ = try await connection.query("DELETE FROM revokes WHERE message_id = \(messageID)", logger: self.logger)
        }
    }
}

/// `PostgresBatcher`'s view of the store for transitions.
struct TransitionWrites: BatchWriter {
    let store: PostgresStore

    func runBatch(_ batch: [(item: Transition, deadline: ContinuousClock.Instant?)]) async throws -> [Bool?] {
        try await store.transitions(batch.map(\.item))
    }

    func runOne(_ item: Transition, deadline: ContinuousClock.Instant?) async throws -> Bool {
        try await store.transitions([item])[0]
    }
}
