import HeraldCore
@testable import HeraldPostgres
import Testing
@testable import HeraldStorage

/// Schema v3 leaves a claimed row (`sending_since` set) out of
/// the user, campaign and active-state indexes (`…_unclaimed`): the readers
/// of those indexes must still see every message a replica is sending —
/// listed in its place, counted in its campaign and in Status.
@Suite("PostgreSQL claimed rows outside the wide indexes (schema v3)", .storeCaseLimit,
       .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct PostgresClaimedRowsTests {
    let leases = PostgresLeaseTests()

    // MARK: Hostile first

    /// Claimed and waiting messages interleaved in creation order, pages of
    /// two: every page walk sees each message once, newest first, with the
    /// claimed ones in their place (a cursor that lands on a claimed row,
    /// filters that keep or drop it).
    @Test func pagesInterleaveClaimedAndWaitingMessagesWithoutGapOrDuplicate() async throws {
        try await leases.withReplicas(["a"]) { replicas, _ in
            let store = replicas[0]
            let ids = (0..<9).map { String(format: "m-%02d", $0) }
            try await store.importMessages(ids.enumerated().map { index, id in
                var message = makeMessage(id: id, key: id, dueAt: index % 3 == 0 ? now : now + 600_000,
                                          createdAt: now + Int64(index))
                message.campaignID = index % 2 == 0 ? "even" : "odd"
                return message
            })
            // m-00, m-03, m-06 are due and claimed (in flight).
            let claimed = try await store.claimDue(before: now, limit: 10, now: now)
            #expect(claimed.map(\.id) == ["m-00", "m-03", "m-06"])
            for limit in [1, 2, 4, 100] {
                var seen: [String] = []
                var after: MessageCursor?
                for _ in 0..<20 {
                    let page = try await store.listMessages(
                        MessageListQuery(bundleID: "com.example.app", userID: "user-1", after: after, limit: limit))
                    seen += page.items.map(\.message.id)
                    guard let next = page.next else { break }
                    after = next
                }
                #expect(seen == ids.reversed(), "limit \(limit)")
            }
            let sending = try await store.listMessages(
                MessageListQuery(bundleID: "com.example.app", userID: "user-1", limit: 10))
            #expect(sending.items.filter { $0.message.isSending }.map(\.message.id) == ["m-06", "m-03", "m-00"])
            let even = try await store.listMessages(
                MessageListQuery(bundleID: "com.example.app", userID: "user-1", campaignID: "even", limit: 10))
            #expect(even.items.map(\.message.id) == ["m-08", "m-06", "m-04", "m-02", "m-00"])
            let other = try await store.listMessages(
                MessageListQuery(bundleID: "com.example.app", userID: "user-2", limit: 10))
            #expect(other.items.isEmpty)
        }
    }

    /// A campaign's counts and Status's active counts are the same before a
    /// claim, while it is held, and after its push ends (then as sent).
    @Test func campaignAndStatusCountsIncludeClaimedMessages() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            var estimating = configuration
            estimating.exactCountRows = 0  // Status's large-table path: active states from the indexes
            let store = try await PostgresStore.open(estimating)
            let ids = (0..<6).map { "m-\($0)" }
            try await store.importMessages(ids.map { makeMessage(id: $0, key: $0, dueAt: now) }
                                           + [makeMessage(id: "done", key: "done", state: .sent)])
            let before = try await store.campaignCounts(bundleID: "com.example.app", campaignID: "welcome",
                                                        createdFrom: nil, createdBefore: nil)
            #expect(before.map(\.scheduled) == [7])
            #expect(try await store.countsByState()[.scheduled] == 6)

            #expect(try await store.claimDue(before: now, limit: 4, now: now).count == 4)
            #expect(try await store.campaignCounts(bundleID: "com.example.app", campaignID: "welcome",
                                                   createdFrom: nil, createdBefore: nil) == before)
            #expect(try await store.countsByState()[.scheduled] == 6)
            // Only the claimed ones in a window of creation times that holds them all.
            #expect(try await store.campaignCounts(bundleID: "com.example.app", campaignID: "welcome",
                                                   createdFrom: now, createdBefore: now + 1).map(\.scheduled) == [7])

            #expect(try await store.transitions(ids.prefix(4).map {
                Transition(id: $0, from: .scheduled, to: .sent, now: now + 5)
            }) == [true, true, true, true])
            let after = try await store.campaignCounts(bundleID: "com.example.app", campaignID: "welcome",
                                                       createdFrom: nil, createdBefore: nil)
            #expect(after.map(\.scheduled) == [7] && after.map(\.sent) == before.map { $0.sent + 4 })
            #expect(try await store.countsByState()[.scheduled] == 2)
            await closeInTime(store)
        }
    }

    /// A v2 database migrates: the three indexes are replaced by their
    /// claim-predicate versions, its rows kept and still found through them;
    /// one an operator built beforehand (`CREATE INDEX CONCURRENTLY`, as
    /// docs/SCALING.md says for large tables) is kept, not built again.
    @Test func aVersionTwoDatabaseGetsThePartialIndexes() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            let seed = [
                "CREATE TABLE herald_schema (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
                "INSERT INTO herald_schema(version) VALUES (1), (2)",
                """
                INSERT INTO messages(id, bundle_id, platform, user_id, campaign_id, delivery_method, ab_test,
                                     window_start, window_end, due_at, state, created_at, updated_at, sending_since,
                                     owner, lease_until, request)
                VALUES ('m-old', 'com.example.app', 'ios', 'user-1', 'welcome', 'traditional', false, 0, 1, 0,
                        'scheduled', 0, 0, 5, 'gone', 10, '')
                """,
                """
                CREATE INDEX CONCURRENTLY messages_user_unclaimed ON messages (bundle_id, user_id, created_at, id)
                    WHERE sending_since IS NULL
                """,
            ]
            try await PostgresTestDatabase.run(
                PostgresSchema.statements(PostgresSchema.v1) + PostgresSchema.statements(PostgresSchema.v2) + seed,
                on: configuration)
            let schema = try #require(configuration.schema)
            let predicates = """
                SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                WHERE c.relnamespace = '\(schema)'::regnamespace AND pg_get_expr(i.indpred, i.indrelid) LIKE '%sending_since IS NULL%'
                """
            #expect(try await PostgresEndsTests.scalar(configuration, predicates) == "messages_due,messages_user_unclaimed")
            let prebuilt = "SELECT '\(schema).messages_user_unclaimed'::regclass::oid::text"
            let before = try await PostgresEndsTests.scalar(configuration, prebuilt)
            let store = try await PostgresStore.open(configuration)
            #expect(try await PostgresEndsTests.scalar(configuration, predicates)
                    == "messages_active_unclaimed,messages_campaign_unclaimed,messages_due,messages_due_lanes,messages_user_unclaimed")
            #expect(try await PostgresEndsTests.scalar(configuration, prebuilt) == before)  // kept, not rebuilt
            let old = "SELECT count(*)::text FROM pg_class WHERE relnamespace = '\(schema)'::regnamespace "
                + "AND relname IN ('messages_user', 'messages_campaign', 'messages_active')"
            #expect(try await PostgresEndsTests.scalar(configuration, old) == "0")
            let listed = try await store.listMessages(MessageListQuery(bundleID: "com.example.app", userID: "user-1", limit: 5))
            #expect(listed.items.map(\.message.id) == ["m-old"])
            await closeInTime(store)
        }
    }
}
