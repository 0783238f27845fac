import Foundation
import HeraldCore
@testable import HeraldPostgres
import Logging
import PostgresNIO
import Testing
@testable import HeraldStorage

/// Issue 27 on PostgreSQL: the event log's order is commit order as readers
/// see it. Sequence numbers are taken when a transaction writes, and
/// transactions commit in any order; a reader that returned events by
/// sequence number would skip one committed later with a smaller number.
/// These cases force that order with two sessions held open, and run two
/// replicas appending at once under one reader.
@Suite("PostgreSQL event log: out-of-order commits and replicas", .storeCaseLimit, .serialized,
       .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct PostgresEventLogTests {
    static let logger = Logger(label: "test")

    /// A session of its own on the test's schema.
    static func session(_ configuration: PostgresStoreConfiguration, id: Int) async throws -> PostgresConnection {
        try await PostgresConnection.connect(configuration: try configuration.connectionConfiguration(), id: id, logger: logger)
    }

    static func run(_ connection: PostgresConnection, _ sql: String) async throws {
        try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
    }

    /// Appends an event for message `id` in the session's transaction, as
    /// the triggers do (the column defaults take the txid and sequence).
    static func append(_ connection: PostgresConnection, _ id: String) async throws {
        try await run(connection, """
            INSERT INTO events(bundle_id, at, kind, message_id, user_id, campaign_id, platform)
            VALUES ('com.example.app', \(now), 'scheduled', '\(id)', 'user-1', 'welcome', 'ios')
            """)
    }

    /// Waits (bounded) until every committed event is readable: a
    /// transaction of another case, older than ours, holds ours back.
    static func settle(_ store: PostgresStore) async throws {
        try await EventLogContractTests.settle(store)
    }

    static func read(_ store: PostgresStore, after cursor: EventCursor?) async throws -> [DeliveryEvent] {
        try await store.events(bundleID: "com.example.app", after: cursor, filter: EventFilter(), limit: 100).events
    }

    /// The sequence number and txid of message `id`'s event, as `connection`
    /// sees it (its own transaction's rows included).
    static func position(_ connection: PostgresConnection, _ id: String) async throws -> (seq: Int64, txid: Int64) {
        var found: (Int64, Int64)?
        for try await row in try await connection.query(PostgresQuery(unsafeSQL: """
            SELECT seq, txid::text::bigint FROM events WHERE message_id = '\(id)'
            """), logger: logger).decode((Int64, Int64).self) {
            found = row
        }
        let (seq, txid) = try #require(found, "\(id)'s event")
        return (seq, txid)
    }

    func withSessions(_ body: (PostgresStore, PostgresConnection, PostgresConnection, PostgresStoreConfiguration) async throws -> Void)
        async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            let store = try await PostgresStore.open(configuration)
            let a = try await Self.session(configuration, id: 11), b = try await Self.session(configuration, id: 12)
            do {
                try await body(store, a, b, configuration)
            } catch {
                try? await a.close()
                try? await b.close()
                await closeInTime(store)
                throw error
            }
            try await a.close()
            try await b.close()
            await closeInTime(store)
        }
    }

    // MARK: Hostile first: forced commit orders

    @Test func anOlderTransactionHoldsBackEveryLaterEventUntilItCommits() async throws {
        try await withSessions { store, a, b, configuration in
            try await Self.append(a, "before")
            try await Self.settle(store)
            let before = try await Self.read(store, after: nil)
            #expect(before.map(\.messageID) == ["before"])
            let cursor = before.last?.cursor
            // A takes its txid and sequence number first, and stays open;
            // B appends after it and commits.
            try await Self.run(a, "BEGIN")
            try await Self.append(a, "a")
            try await Self.run(b, "BEGIN")
            try await Self.append(b, "b")
            try await Self.run(b, "COMMIT")
            let (aPosition, bPosition) = (try await Self.position(a, "a"), try await Self.position(a, "b"))
            #expect(bPosition.seq > aPosition.seq && bPosition.txid > aPosition.txid)
            // B is committed, but A could still commit an event before it: neither shows.
            #expect(try await Self.read(store, after: cursor).isEmpty)
            #expect(try await Self.read(store, after: nil).map(\.messageID) == ["before"])
            #expect(try await store.latestEventCursor(bundleID: "com.example.app") == cursor)
            try await Self.run(a, "COMMIT")
            try await Self.settle(store)
            let after = try await Self.read(store, after: cursor)
            #expect(after.map(\.messageID) == ["a", "b"])
            #expect(after.map(\.cursor) == [EventCursor(major: aPosition.txid, minor: aPosition.seq),
                                            EventCursor(major: bPosition.txid, minor: bPosition.seq)])
            #expect(try await store.latestEventCursor(bundleID: "com.example.app") == after.last?.cursor)
        }
    }

    @Test func aSmallerSequenceNumberCommittedLaterIsReadAfterTheLastCursor() async throws {
        try await withSessions { store, a, b, configuration in
            // B takes its txid first; A then takes the smaller sequence
            // number; B appends and commits while A is still open.
            try await Self.run(b, "BEGIN")
            try await Self.run(b, "SELECT pg_current_xact_id()")
            try await Self.run(a, "BEGIN")
            try await Self.append(a, "a")
            try await Self.append(b, "b")
            try await Self.run(b, "COMMIT")
            let (aPosition, bPosition) = (try await Self.position(a, "a"), try await Self.position(a, "b"))
            #expect(aPosition.seq < bPosition.seq && bPosition.txid < aPosition.txid)
            // B sorts before anything A can still commit: it is readable
            // (once any older transaction of another case has ended).
            try await Self.settle(store)
            let first = try await Self.read(store, after: nil)
            #expect(first.map(\.messageID) == ["b"])
            let cursor = try #require(first.last?.cursor)
            #expect(try await Self.read(store, after: cursor).isEmpty)
            try await Self.run(a, "COMMIT")
            try await Self.settle(store)
            // A's event, with the smaller sequence number, comes after the
            // reader's cursor: not skipped.
            #expect(try await Self.read(store, after: cursor).map(\.messageID) == ["a"])
            #expect(try await Self.read(store, after: nil).map(\.messageID) == ["b", "a"])
        }
    }

    @Test func aRolledBackTransactionLeavesNoEventAndReleasesTheReaders() async throws {
        try await withSessions { store, a, b, _ in
            try await Self.run(a, "BEGIN")
            try await Self.append(a, "gone")
            try await Self.append(b, "kept")
            #expect(try await Self.read(store, after: nil).isEmpty)
            try await Self.run(a, "ROLLBACK")
            try await Self.settle(store)
            #expect(try await Self.read(store, after: nil).map(\.messageID) == ["kept"])
        }
    }

    // MARK: Replicas

    @Test func twoReplicasAppendingAtOnceAreReadOnceEachInOrder() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            var replicas: [PostgresStore] = []
            for name in ["a", "b"] {
                var replica = configuration
                replica.replicaID = name
                replicas.append(try await PostgresStore.open(replica))
            }
            let perWriter = 60
            let writers = 4
            do {
                let reader = replicas[0]
                let seen = try await withThrowingTaskGroup(of: [DeliveryEvent].self) { group in
                    for writer in 0..<writers {
                        let store = replicas[writer % 2]
                        group.addTask {
                            for i in 0..<perWriter {
                                let id = "w\(writer)-\(i)"
                                _ = try await store.schedule(makeMessage(id: id, key: id))
                                if i.isMultiple(of: 3) {
                                    _ = try await store.claim(ids: [id], now: now + 1)
                                    _ = try await store.transitions([Transition(
                                        id: id, from: .scheduled, to: .sent, now: now + 2,
                                        outcomes: [DeviceOutcome(messageID: id, deviceToken: "t", kind: .sent, at: now + 2)])])
                                }
                            }
                            return []
                        }
                    }
                    // One reader on replica A, resuming from its last cursor
                    // in small pages while both replicas write.
                    group.addTask {
                        var events: [DeliveryEvent] = []
                        var cursor: EventCursor?
                        let expected = writers * perWriter + writers * (perWriter / 3) * 2
                        for _ in 0..<100_000 where events.count < expected {
                            let page = try await reader.events(
                                bundleID: "com.example.app", after: cursor, filter: EventFilter(), limit: 7)
                            events += page.events
                            cursor = page.reached ?? cursor
                            if page.events.isEmpty { await Task.yield() }
                        }
                        return events
                    }
                    var all: [DeliveryEvent] = []
                    for try await events in group { all += events }
                    return all
                }
                let expected = writers * perWriter + writers * (perWriter / 3) * 2
                #expect(seen.count == expected)
                #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.cursor < $1.cursor })
                let keys = seen.map { "\($0.kind.rawValue) \($0.messageID) \($0.deviceToken ?? "-")" }
                #expect(Set(keys).count == keys.count, "no event twice")
                #expect(Set(seen.filter { $0.kind == .scheduled }.map(\.messageID))
                    == Set((0..<writers).flatMap { w in (0..<perWriter).map { "w\(w)-\($0)" } }))
                // A reader on replica B sees the same log.
                try await Self.settle(replicas[1])
                let fromB = try await replicas[1].events(
                    bundleID: "com.example.app", after: nil, filter: EventFilter(), limit: 10_000).events
                #expect(fromB == seen)
            } catch {
                for replica in replicas { await closeInTime(replica) }
                throw error
            }
            for replica in replicas { await closeInTime(replica) }
        }
    }
}
