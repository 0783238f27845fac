import Foundation
import HeraldCore
import HeraldTestSupport
import Testing
@testable import HeraldStorage

/// The writer's multi-row inserts (`MessageInsertBatch`): Schedules queued
/// behind a held writer all land in one batch, so each case below runs
/// through the gathered path, and the failure cases through the savepoint
/// path it falls back to.
@Suite("Multi-row inserts per group commit", .timeLimit(.minutes(1)))
struct InsertBatchTests {
    /// Runs `writes` concurrently behind a held writer (one batch), in
    /// submission order, and returns their results in that order.
    static func oneBatch<T: Sendable>(
        _ store: SQLiteStore, _ writes: [@Sendable () async throws -> T]
    ) async throws -> [Result<T, any Error>] {
        let (gate, release) = await holdWriter(store)
        var tasks: [Task<T, any Error>] = []
        for (index, write) in writes.enumerated() {
            tasks.append(Task(operation: write))
            // Queue in order: each write is in the queue before the next starts.
            while store.writer.queuedCount < index + 1 { await Task.yield() }
        }
        release.signal()
        try await gate.value
        var results: [Result<T, any Error>] = []
        for task in tasks { results.append(await task.result) }
        return results
    }

    @Test func theSameKeyTwiceInOneBatchSupersedesTheFirst() async throws {
        try await withStore { store, _ in
            let first = makeMessage(key: "k"), second = makeMessage(key: "k"), third = makeMessage(key: "k")
            let before = store.writeStats.commits
            let results = try await Self.oneBatch(store, [first, second, third].map { message in
                { try await store.schedule(message) }
            })
            #expect(store.writeStats.commits == before + 2)  // the gate, then the three together
            #expect(try results[0].get() == .scheduled(first, supersededID: nil))
            #expect(try results[1].get() == .scheduled(second, supersededID: first.id))
            #expect(try results[2].get() == .scheduled(third, supersededID: second.id))
            #expect(try await store.message(bundleID: first.bundleID, idempotencyKey: "k")?.id == third.id)
            #expect(try await store.message(id: first.id)?.state == .superseded)
            #expect(try await store.countsByState() == [.scheduled: 1, .superseded: 2])
        }
    }

    @Test func aCancelInTheBatchSeesTheScheduleBeforeIt() async throws {
        try await withStore { store, _ in
            let message = makeMessage(key: "c"), later = makeMessage(key: "d")
            let schedule: @Sendable () async throws -> Bool = { try await store.schedule(message) == .scheduled(message, supersededID: nil) }
            let cancel: @Sendable () async throws -> Bool = {
                try await store.cancel(
                    bundleID: message.bundleID, platform: .ios, userID: message.userID,
                    campaignID: message.campaignID, idempotencyKey: "c", now: now + 1) != .notFound
            }
            let scheduleLater: @Sendable () async throws -> Bool = { try await store.schedule(later) == .scheduled(later, supersededID: nil) }
            let results = try await Self.oneBatch(store, [schedule, cancel, scheduleLater])
            #expect(try results.map { try $0.get() } == [true, true, true])
            #expect(try await store.message(id: message.id)?.state == .cancelled)
            #expect(try await store.countsByState() == [.cancelled: 1, .scheduled: 1])
        }
    }

    @Test func oneFailingRowFailsAloneAndTheRestCommit() async throws {
        try await withStore { store, _ in
            // The same message id twice: the multi-row INSERT fails on the
            // unique id, the batch is run again row by row, and only the
            // duplicate fails.
            let messages = (0..<40).map { makeMessage(key: "k\($0)") }
            var duplicate = makeMessage(key: "dup")
            duplicate.id = messages[7].id
            let all = Array(messages[..<20]) + [duplicate] + Array(messages[20...])
            let results = try await Self.oneBatch(store, all.map { message in
                { try await store.schedule(message) }
            })
            #expect(results.count == 41)
            for (index, result) in results.enumerated() {
                if index == 20 {
                    #expect(throws: StoreError.self) { try result.get() }
                } else {
                    #expect(try result.get() == .scheduled(all[index], supersededID: nil))
                }
            }
            #expect(try await store.countsByState() == [.scheduled: 40])
            #expect(try await store.message(bundleID: duplicate.bundleID, idempotencyKey: "dup") == nil)
            for message in messages {
                #expect(try await store.message(id: message.id) == message)
            }
        }
    }

    @Test func everyChunkSizeStoresEveryRowWithItsFunnel() async throws {
        try await withStore { store, path in
            // 64 + 32 + 16 + 8 + 4 + 2 + 1 = 127 rows through every statement
            // size, some without a key, with an imported non-SCHEDULED state.
            let messages = (0..<127).map { index in
                makeMessage(key: index % 5 == 0 ? nil : "k\(index)", dueAt: now + Int64(index))
            }
            let results = try await Self.oneBatch(store, messages.map { message in
                { try await store.schedule(message) }
            })
            #expect(try results.map { try $0.get() } == messages.map { .scheduled($0, supersededID: nil) })
            try await store.importMessages([makeMessage(key: "gone", state: .cancelled), makeMessage(key: nil, state: .failed)])
            #expect(try await store.countsByState() == [.scheduled: 127, .cancelled: 1, .failed: 1])
            for message in messages {
                #expect(try await store.message(id: message.id) == message)
                if let key = message.idempotencyKey {
                    #expect(try await store.message(bundleID: message.bundleID, idempotencyKey: key)?.id == message.id)
                }
            }
            // The funnel the INSERT wrote is what the SQL expression says.
            let mismatches = try store.read { db in
                try db.scalarInt("SELECT count(*) FROM messages WHERE funnel IS NOT \(MessageFunnel.expression(""))")
            }
            #expect(mismatches == 0)
            #expect(try store.read { db in try db.scalarInt("SELECT count(*) FROM messages WHERE funnel <> 0") } == 2)
        }
    }

    @Test func theFunnelAtInsertMatchesTheSQLExpressionForEveryState() async throws {
        try await withStore { store, _ in
            let messages = MessageState.allCases.map { makeMessage(key: "k-\($0.rawValue)", state: $0) }
            try await store.importMessages(messages)
            let rows = try store.read { db in
                let statement = try db.prepare("SELECT state, funnel, \(MessageFunnel.expression("")) FROM messages")
                var rows: [(String, Int64, Int64)] = []
                while try statement.step() { rows.append((statement.string(0), statement.int64(1), statement.int64(2))) }
                return rows
            }
            #expect(rows.count == MessageState.allCases.count)
            for (state, written, expected) in rows {
                #expect(written == expected, "\(state)")
            }
        }
    }

    @Test func aVersion5DatabaseLosesItsInsertTriggersAndKeepsItsCounts() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/v5.sqlite"
            let old = makeMessage(key: "old")
            do {
                let db = try Database(path: path, create: true, busyTimeoutMs: 1000)
                try db.transaction {
                    for migration in Schema.migrations.prefix(5) { try db.execute(migration) }
                    try db.execute("PRAGMA user_version = 5")
                }
                try insertBeforeV6(db, old)
                db.close()
            }
            let store = try SQLiteStore(path: path)
            #expect(try userVersion(path) == SQLiteStore.schemaVersion)
            let triggers = try store.read { db in
                try db.scalarInt("SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND name LIKE '%insert'")
            }
            #expect(triggers == 0)
            _ = try await store.schedule(makeMessage(key: "new"))
            #expect(try await store.countsByState() == [.scheduled: 2])
            await store.close()
        }
    }
}
