import HeraldCore
@testable import HeraldPostgres
import Logging
import PostgresNIO
import Testing
@testable import HeraldStorage

/// The dispatcher's writes in single statements (`endPushes`, claims, marks):
/// a batch ends only what its replica still owns, a poll claims only what is
/// still waiting, and each write is committed (visible to another replica's
/// pool) when its call returns.
@Suite("PostgreSQL pushes' ends and claims in one statement", .storeCaseLimit,
       .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct PostgresEndsTests {
    let leases = PostgresLeaseTests()

    static func scalar(_ configuration: PostgresStoreConfiguration, _ sql: String) async throws -> String? {
        try await PostgresStoreTests.scalar(configuration, sql)
    }

    // MARK: Hostile first

    /// One batch from A: m-0 and m-5 end normally; m-1's state moved on
    /// meanwhile (its outcomes are still recorded, its marks dropped); m-2
    /// was taken over and claimed again by B (nothing of A's is written, B's
    /// marks stay); m-3 was taken over but not claimed again (no owner: the
    /// end applies, as in the transaction); an unknown id records nothing.
    @Test func aBatchEndsOnlyWhatItsReplicaStillOwns() async throws {
        try await leases.withReplicas(["a", "b"]) { replicas, configuration in
            let (a, b) = (replicas[0], replicas[1])
            let ids = (0..<6).map { "m-\($0)" }
            try await a.importMessages(ids.map { makeMessage(id: $0, key: $0, dueAt: now) })
            let claims = try await a.claimDue(before: now, limit: 10, now: now)
            #expect(claims.map(\.id) == ids)
            let push = try #require(claims.first?.pushStartedAt)
            try await a.recordHandOvers(["m-0", "m-4", "m-5"].map {
                HandOverMark(messageID: $0, deviceToken: "a-\($0)", push: push, at: now + 1)
            })
            // m-1 moves on by itself (and is claimed again, a mark recorded);
            // A renews all but m-2 and m-3, which B takes over; B claims m-2 again.
            #expect(try await a.transitions([Transition(id: "m-1", from: .scheduled, to: .handedOff, dueAt: now + 90_000,
                                                        now: now + 2)]) == [true])
            let again = try #require(try await a.claimDue(before: now + 90_000, limit: 10, now: now + 20_000).first)
            #expect(again.id == "m-1")
            try await a.recordHandOvers([HandOverMark(messageID: "m-1", deviceToken: "a-m-1", push: try #require(again.pushStartedAt),
                                                      at: now + 20_001)])
            #expect(try await a.renewLeases(ids: ["m-0", "m-1", "m-4", "m-5"], now: now + 20_000).count == 4)
            #expect(Set(try await b.takeOverExpired(now: now + 30_001).resumed) == ["m-2", "m-3"])
            let reclaimed = try #require(try await b.claimDue(before: now + 30_002, limit: 1, now: now + 30_002).first)
            #expect(reclaimed.id == "m-2")
            let bPush = try #require(reclaimed.pushStartedAt)
            try await b.recordHandOvers([HandOverMark(messageID: "m-2", deviceToken: "b-m-2", push: bPush, at: now + 30_003)])

            func end(_ id: String, from: MessageState = .scheduled) -> Transition {
                Transition(id: id, from: from, to: .sent, providerMessageID: "apns-\(id)", now: now + 30_010, outcomes: [
                    DeviceOutcome(messageID: id, deviceToken: "a-\(id)", kind: .sent, providerMessageID: "apns-\(id)", at: now + 30_010,
                                  httpStatus: 200, attempts: 1, environment: .production),
                    DeviceOutcome(messageID: id, deviceToken: "x-\(id)", kind: .failed, reason: "BadDeviceToken", at: now + 30_011),
                ])
            }
            let applied = try await a.transitions(["m-5", "m-1", "m-2", "m-3", "m-missing", "m-0"].map { end($0) })
            #expect(applied == [true, false, false, true, false, true])
            #expect(try await a.countsByState() == [.sent: 3, .handedOff: 1, .scheduled: 2])
            // Outcomes in the batch's order (m-5's first), every column kept.
            #expect(try await Self.scalar(configuration, """
                SELECT string_agg(device_token || ':' || status || ':' || coalesce(provider_message_id, '-') || ':' || coalesce(reason, '-')
                                  || ':' || coalesce(http_status::text, '-') || ':' || coalesce(attempts::text, '-')
                                  || ':' || coalesce(environment, '-'), ' ' ORDER BY seq) FROM outcomes
                """) == """
                a-m-5:sent:apns-m-5:-:200:1:production x-m-5:failed:-:BadDeviceToken:-:-:- \
                a-m-1:sent:apns-m-1:-:200:1:production x-m-1:failed:-:BadDeviceToken:-:-:- \
                a-m-3:sent:apns-m-3:-:200:1:production x-m-3:failed:-:BadDeviceToken:-:-:- \
                a-m-0:sent:apns-m-0:-:200:1:production x-m-0:failed:-:BadDeviceToken:-:-:-
                """)
            // Marks: B's live push keeps its, A's m-4 (not in the batch) too.
            #expect(try await Self.scalar(configuration, "SELECT string_agg(device_token, ',' ORDER BY device_token) FROM handovers")
                    == "a-m-4,b-m-2")
            #expect(try await PostgresLeaseTests.owner(configuration, "m-2") == "b")
            #expect(try await a.message(id: "m-2")?.sendingSince != nil)
            let m0 = try await a.message(id: "m-0")
            #expect(m0?.state == .sent && m0?.providerMessageID == "apns-m-0" && m0?.sendingSince == nil)
            #expect(try await PostgresLeaseTests.owner(configuration, "m-0") == "none")
        }
    }

    /// A replica whose every claim in the batch was taken: nothing written.
    @Test func aBatchFromAReplicaThatLostEveryLeaseWritesNothing() async throws {
        try await leases.withReplicas(["a", "b"]) { replicas, configuration in
            let (a, b) = (replicas[0], replicas[1])
            let ids = (0..<3).map { "m-\($0)" }
            try await a.importMessages(ids.map { makeMessage(id: $0, key: $0, dueAt: now) })
            #expect(try await a.claimDue(before: now, limit: 10, now: now).count == 3)
            #expect(try await b.takeOverExpired(now: now + 30_001).resumed == ids)
            #expect(try await b.claimDue(before: now + 30_002, limit: 10, now: now + 30_002).count == 3)
            let late = ids.map { id in
                Transition(id: id, from: .scheduled, to: .failed, lastError: "late", now: now + 30_003,
                           outcomes: [DeviceOutcome(messageID: id, deviceToken: "t", kind: .failed, at: now + 30_003)])
            }
            #expect(try await a.transitions(late) == [false, false, false])
            #expect(try await Self.scalar(configuration, "SELECT count(*)::text FROM outcomes") == "0")
            #expect(try await Self.scalar(configuration, "SELECT string_agg(DISTINCT owner, ',') FROM messages") == "b")
            #expect(try await a.countsByState() == [.scheduled: 3])
        }
    }

    /// A poll claims at most its limit, on a fresh (unanalyzed) table too,
    /// where the planner rescanned a joined `LIMIT … SKIP LOCKED` subquery
    /// per row and one poll of limit 1 claimed all 40 due messages.
    @Test func aPollClaimsAtMostItsLimit() async throws {
        try await leases.withReplicas(["a"]) { replicas, configuration in
            let a = replicas[0]
            try await a.importMessages((0..<40).map { makeMessage(id: String(format: "m-%02d", $0), key: "k\($0)", dueAt: now) })
            #expect(try await a.claimDue(before: now, limit: 1, now: now).map(\.id) == ["m-00"])
            #expect(try await a.claimDue(before: now, limit: 3, now: now).map(\.id) == ["m-01", "m-02", "m-03"])
            #expect(try await Self.scalar(configuration, "SELECT count(*)::text FROM messages WHERE sending_since IS NOT NULL") == "4")
        }
    }

    /// A poll claims only what is still waiting: not a cancelled message,
    /// not B's live claim, not B's claim whose lease ran out (until it is
    /// taken over), not a row another transaction holds locked (`SKIP
    /// LOCKED`), which it claims once the lock is gone.
    @Test func aPollClaimsOnlyWhatIsStillWaiting() async throws {
        try await leases.withReplicas(["a", "b"]) { replicas, configuration in
            let (a, b) = (replicas[0], replicas[1])
            try await a.importMessages([
                makeMessage(id: "m-expired", key: "e", dueAt: now - 4), makeMessage(id: "m-live", key: "l", dueAt: now - 3),
                makeMessage(id: "m-cancelled", key: "c", dueAt: now - 2), makeMessage(id: "m-locked", key: "x", dueAt: now - 1),
                makeMessage(id: "m-0", key: "0", dueAt: now), makeMessage(id: "m-1", key: "1", dueAt: now),
            ])
            #expect(try await b.claimDue(before: now - 4, limit: 1, now: now - 40_000).map(\.id) == ["m-expired"])
            #expect(try await b.claimDue(before: now - 3, limit: 1, now: now).map(\.id) == ["m-live"])
            guard case .cancelled = try await a.cancel(bundleID: "com.example.app", platform: .ios, userID: "user-1",
                                                       campaignID: "welcome", idempotencyKey: "c", now: now) else {
                Issue.record("m-cancelled was not cancelled")
                return
            }
            let holder = try await PostgresConnection.connect(
                configuration: try configuration.connectionConfiguration(), id: 9, logger: Logger(label: "test"))
            do {
                try await holder.query("BEGIN", logger: Logger(label: "test"))
                try await holder.query("SELECT id FROM messages WHERE id = 'm-locked' FOR UPDATE", logger: Logger(label: "test"))
                #expect(try await a.claimDue(before: now, limit: 10, now: now).map(\.id) == ["m-0", "m-1"])
                try await holder.query("ROLLBACK", logger: Logger(label: "test"))
            } catch {
                try? await holder.close()
                throw error
            }
            try await holder.close()
            #expect(try await a.claimDue(before: now, limit: 10, now: now + 1).map(\.id) == ["m-locked"])
            #expect(try await PostgresLeaseTests.owner(configuration, "m-expired") == "b")
        }
    }

    /// Each single-statement write is committed when its call returns:
    /// another replica's pool sees the claim, the hand-over mark and the end
    /// at once, every time. (The protocol commits at Sync, after the
    /// statement's answer; `autocommit` waits for it with an empty query.
    /// PostgreSQL 15 happens to flush that answer only after the commit, so
    /// this also passes without the wait; it fails if a write is left
    /// uncommitted on return.)
    @Test func aWriteIsCommittedWhenItsCallReturns() async throws {
        try await leases.withReplicas(["a", "b"]) { replicas, _ in
            let (a, b) = (replicas[0], replicas[1])
            let ids = (0..<40).map { String(format: "m-%02d", $0) }
            try await a.importMessages(ids.map { makeMessage(id: $0, key: $0, dueAt: now) })
            for (index, id) in ids.enumerated() {
                let time = now + Int64(index) * 10
                let claimed = try #require(try await a.claimDue(before: now, limit: 1, now: time).first)
                #expect(claimed.id == id)
                #expect(try await b.message(id: id)?.sendingSince == time)
                try await a.recordHandOvers([HandOverMark(messageID: id, deviceToken: "d", push: time, at: time + 1)])
                #expect(try await b.handOvers(messageID: id, push: time) == ["d"])
                #expect(try await a.transitions([Transition(id: id, from: .scheduled, to: .sent, now: time + 2)]) == [true])
                #expect(try await b.message(id: id)?.state == .sent)
            }
        }
    }

    /// A database at schema v1 (foreign keys on the per-device tables, rows
    /// in them) migrates to the current version at open: its rows kept, the
    /// three foreign keys gone (outcomes, handovers, keys), revokes' there.
    @Test func aVersionOneDatabaseMigratesKeepingItsRows() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            let schema = try #require(configuration.schema)
            let seed = [
                "CREATE TABLE herald_schema (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
                "INSERT INTO herald_schema(version) VALUES (1)",
                """
                INSERT INTO messages(id, bundle_id, platform, user_id, campaign_id, delivery_method, ab_test, window_start,
                                     window_end, due_at, state, created_at, updated_at, request)
                VALUES ('m-old', 'com.example.app', 'ios', 'user-1', 'welcome', 'traditional', false, 0, 1, 0, 'sent', 0, 0, '')
                """,
                "INSERT INTO outcomes(message_id, device_token, status, at) VALUES ('m-old', 't', 'sent', 1)",
                "INSERT INTO handovers(message_id, device_token, push, at) VALUES ('m-old', 't', 0, 1)",
            ]
            try await PostgresTestDatabase.run(PostgresSchema.statements(PostgresSchema.v1) + seed, on: configuration)
            let foreignKeys = "SELECT string_agg(conrelid::regclass::text, ',' ORDER BY conrelid::regclass::text) FROM pg_constraint "
                + "WHERE contype = 'f' AND connamespace = '\(schema)'::regnamespace"
            #expect(try await Self.scalar(configuration, foreignKeys) == "handovers,message_keys,outcomes,revokes")
            let store = try await PostgresStore.open(configuration)
            #expect(try await Self.scalar(configuration, "SELECT max(version)::text FROM herald_schema") == "\(PostgresStore.schemaVersion)")
            #expect(try await Self.scalar(configuration, foreignKeys) == "revokes")
            #expect(try await store.outcomes(messageID: "m-old").map(\.deviceToken) == ["t"])
            #expect(try await store.handOvers(messageID: "m-old", push: 0) == ["t"])
            #expect(try await store.message(id: "m-old")?.state == .sent)
            await closeInTime(store)
        }
    }
}
