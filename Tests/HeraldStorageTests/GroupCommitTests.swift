import Foundation
import HeraldCore
import HeraldTestSupport
import Testing
@testable import HeraldStorage

@Suite("Group commit", .timeLimit(.minutes(1)))
struct GroupCommitTests {
    @Test func concurrentWritesShareOneTransaction() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/group.sqlite"
            let store = try SQLiteStore(path: path)
            let count = 1_000

            // Hold the writer so that every schedule queues behind the gate.
            let (gate, release) = await holdWriter(store)

            let messages = (0..<count).map { makeMessage(key: "k\($0)") }
            let writes = Task {
                try await withThrowingTaskGroup(of: ScheduleOutcome.self) { group in
                    for message in messages {
                        group.addTask { try await store.schedule(message) }
                    }
                    var outcomes: [ScheduleOutcome] = []
                    for try await outcome in group { outcomes.append(outcome) }
                    return outcomes
                }
            }
            while store.writer.queuedCount < count { await Task.yield() }
            release.signal()
            try await gate.value
            let outcomes = try await writes.value

            #expect(outcomes.count == count)
            let stats = store.writeStats
            #expect(stats.commits == 2)  // the gate, then all 1,000 together
            #expect(stats.writes == count + 1)
            #expect(stats.largestBatch == count)
            await store.close()

            let reopened = try SQLiteStore(path: path)
            #expect(try await reopened.countsByState() == [.scheduled: count])
            for message in messages.prefix(50) {
                #expect(try await reopened.message(id: message.id) == message)
            }
            await reopened.close()
        }
    }

    @Test func unpacedConcurrentWritesBatchAndAllSurviveReopen() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/unpaced.sqlite"
            let store = try SQLiteStore(path: path)
            let messages = (0..<1_000).map { makeMessage(key: "k\($0)") }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for message in messages {
                    group.addTask { _ = try await store.schedule(message) }
                }
                try await group.waitForAll()
            }
            let stats = store.writeStats
            #expect(stats.writes == 1_000)
            #expect(stats.commits < stats.writes)
            await store.close()

            let reopened = try SQLiteStore(path: path)
            #expect(try await reopened.countsByState() == [.scheduled: 1_000])
            var seen = 0
            try await reopened.forEachPendingBatch(batchSize: 128) { seen += $0.count }
            #expect(seen == 1_000)
            await reopened.close()
        }
    }

    @Test func oneFailingWriteDoesNotSinkItsBatch() async throws {
        try await withStore { store, _ in
            let message = makeMessage(key: nil)
            _ = try await store.schedule(message)
            let (gate, release) = await holdWriter(store)

            let good = makeMessage(key: nil)
            let duplicate = Task { try await store.schedule(message) }  // same id: constraint error
            let fine = Task { try await store.schedule(good) }
            while store.writer.queuedCount < 2 { await Task.yield() }
            release.signal()
            try await gate.value

            await #expect(throws: StoreError.self) { try await duplicate.value }
            #expect(try await fine.value == .scheduled(good, supersededID: nil))
            #expect(try await store.countsByState() == [.scheduled: 2])
        }
    }

    @Test func concurrentSchedulesWithOneKeyLeaveExactlyOneLive() async throws {
        try await withStore { store, _ in
            let messages = (0..<200).map { makeMessage(userID: "user-\($0)") }
            let outcomes = try await withThrowingTaskGroup(of: ScheduleOutcome.self) { group in
                for message in messages {
                    group.addTask { try await store.schedule(message) }
                }
                var outcomes: [ScheduleOutcome] = []
                for try await outcome in group { outcomes.append(outcome) }
                return outcomes
            }
            #expect(outcomes.filter { !$0.replaced }.count == 1)
            #expect(try await store.countsByState() == [.scheduled: 1, .superseded: 199])
            let live = try #require(try await store.message(bundleID: "com.example.app", idempotencyKey: "key-1"))
            #expect(live.state == .scheduled)
            #expect(try await store.pending(after: nil, limit: 1_000).map(\.id) == [live.id])
        }
    }

    @Test func checkpointsKeepEveryWriteAndBoundTheWAL() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/checkpoints.sqlite"
            var options = SQLiteStore.Options()
            options.checkpointPages = 4
            options.walLimitPages = 64
            let store = try SQLiteStore(path: path, options: options)
            let messages = (0..<2_000).map { makeMessage(key: "k\($0)", request: [UInt8](repeating: 7, count: 900)) }
            for chunk in stride(from: 0, to: messages.count, by: 100) {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for message in messages[chunk..<(chunk + 100)] {
                        group.addTask { _ = try await store.schedule(message) }
                    }
                    try await group.waitForAll()
                }
            }
            // Every message holds most of a page: without checkpoints the WAL
            // would hold over 2,000 frames (> 8 MiB). The RESTART limit keeps it
            // at 64 frames plus the one transaction that crosses it, and group
            // commit may put a whole chunk of 100 schedules (a few pages each)
            // in that transaction on a loaded machine (1.07-1.19 MiB seen), so
            // the bound is 64 + 400 frames, still a quarter of no checkpoints.
            let walSize = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
            #expect(walSize < (64 + 400) * (4_096 + 24))
            #expect(try await store.countsByState() == [.scheduled: 2_000])
            await store.close()
            #expect(!FileManager.default.fileExists(atPath: path + "-wal"))

            let reopened = try SQLiteStore(path: path)
            var seen = 0
            try await reopened.forEachPendingBatch(batchSize: 500) { seen += $0.count }
            #expect(seen == 2_000)
            await reopened.close()
        }
    }

    @Test func anAcknowledgedWriteIsVisibleToAnotherConnectionWithoutClosing() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/ack.sqlite"
            let writer = try SQLiteStore(path: path)
            let message = makeMessage()
            _ = try await writer.schedule(message)
            // A second, independent store on the same file (as a restarted
            // process would be) sees the write while the first is still open.
            let other = try SQLiteStore(path: path)
            #expect(try await other.message(id: message.id) == message)
            await other.close()
            await writer.close()
        }
    }

    @Test(arguments: [SQLiteStore.Durability.pipelinedSync, .sqliteFull, .processCrash])
    func everyDurabilityModeKeepsAcknowledgedWrites(_ durability: SQLiteStore.Durability) async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/durability.sqlite"
            var options = SQLiteStore.Options()
            options.durability = durability
            let store = try SQLiteStore(path: path, options: options)
            let messages = (0..<300).map { makeMessage(key: "k\($0)") }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for message in messages {
                    group.addTask { _ = try await store.schedule(message) }
                }
                try await group.waitForAll()
            }
            let stats = store.writeStats
            if durability == .pipelinedSync {
                #expect(stats.walSyncs >= 1 && stats.walSyncs <= stats.commits)
            } else {
                #expect(stats.walSyncs == 0)
            }
            #expect(try await store.countsByState() == [.scheduled: 300])
            await store.close()

            let reopened = try SQLiteStore(path: path)
            #expect(try await reopened.message(id: messages[299].id) == messages[299])
            #expect(try await reopened.countsByState() == [.scheduled: 300])
            await reopened.close()
        }
    }
}
