import HeraldCore
@testable import HeraldPostgres
@testable import HeraldStorage
import Synchronization
import Testing

/// Group commit for Schedule on PostgreSQL (`PostgresBatcher`,
/// `PostgresStore.scheduleBatch`): the batcher against a scripted writer
/// (what waits is batched, a cancelled or expired Schedule is written
/// nowhere, a failing batch is retried one by one), then the batch SQL
/// against the throwaway cluster (last request wins inside one batch and
/// across concurrent batches).
@Suite("PostgreSQL group commit: Schedules, device reads", .storeCaseLimit)
struct PostgresScheduleBatchTests {
    /// A writer whose first write waits for `release()`; records every call.
    final class ScriptedWriter: BatchWriter {
        struct Log { var batches: [[String]] = []; var singles: [String] = [] }
        let log = Mutex(Log())
        let entered = AsyncStream<Void>.makeStream()
        let gate = AsyncStream<Void>.makeStream()
        let blockFirst = Atomic<Bool>(true)

        func release() { gate.continuation.yield() }

        private func pass() async {
            guard blockFirst.exchange(false, ordering: .acquiringAndReleasing) else { return }
            entered.continuation.yield()
            var gates = gate.stream.makeAsyncIterator()
            _ = await gates.next()
        }

        func runBatch(
            _ batch: [(item: StoredMessage, deadline: ContinuousClock.Instant?)]
        ) async throws -> [ScheduleOutcome?] {
            log.withLock { $0.batches.append(batch.map(\.item.id)) }
            await pass()
            if batch.contains(where: { $0.item.id == "bad" }) { throw StoreError.database("duplicate key") }
            return batch.map { .scheduled($0.item, supersededID: nil) }
        }

        func runOne(_ message: StoredMessage, deadline: ContinuousClock.Instant?) async throws -> ScheduleOutcome {
            log.withLock { $0.singles.append(message.id) }
            await pass()
            if message.id == "bad" { throw StoreError.database("duplicate key") }
            return .scheduled(message, supersededID: nil)
        }
    }

    /// Runs `ids` through a one-slot batcher while `first` holds the slot;
    /// releases it once all of them wait. Returns each id's result.
    func throughOneSlot(
        first: String, waiting ids: [String], cancel: Set<String> = [], writer: ScriptedWriter
    ) async throws -> [String: Result<ScheduleOutcome, any Error>] {
        let (allQueued, queuedSignal) = AsyncStream<Void>.makeStream()
        let expected = ids.count
        let batcher = PostgresBatcher<StoredMessage, ScheduleOutcome>(maximumBatch: 64, maximumInFlight: 1) { length in
            if length == expected { queuedSignal.yield() }
        }
        let head = Task { try await batcher.run(makeMessage(id: first, key: first), writer: writer) }
        var entered = writer.entered.stream.makeAsyncIterator()
        _ = await entered.next()
        var tasks: [String: Task<ScheduleOutcome, any Error>] = [:]
        for id in ids {
            tasks[id] = Task { try await batcher.run(makeMessage(id: id, key: id), writer: writer) }
        }
        var signals = allQueued.makeAsyncIterator()
        _ = await signals.next()
        for id in cancel { tasks[id]?.cancel() }
        writer.release()
        _ = try await head.value
        var results: [String: Result<ScheduleOutcome, any Error>] = [:]
        for (id, task) in tasks { results[id] = await task.result }
        return results
    }

    // MARK: Hostile first

    @Test func aFailingBatchIsRetriedOneByOneSoOnlyTheBadScheduleFails() async throws {
        let writer = ScriptedWriter()
        let results = try await throughOneSlot(first: "head", waiting: ["a", "bad", "b"], writer: writer)
        #expect(throws: StoreError.self) { try results["bad"]!.get() }
        #expect((try? results["a"]!.get()) != nil && (try? results["b"]!.get()) != nil)
        let log = writer.log.withLock { $0 }
        #expect(log.batches.map { Set($0) } == [["a", "bad", "b"]])
        #expect(log.singles.first == "head" && Set(log.singles.dropFirst()) == ["a", "bad", "b"])
    }

    @Test func aCancelledWaitingScheduleIsWrittenNowhere() async throws {
        let writer = ScriptedWriter()
        let results = try await throughOneSlot(first: "head", waiting: ["a", "gone", "b"], cancel: ["gone"], writer: writer)
        #expect(throws: StoreError.abandoned) { try results["gone"]!.get() }
        let log = writer.log.withLock { $0 }
        #expect(log.batches.map { Set($0) } == [["a", "b"]] && log.singles == ["head"])
    }

    @Test func schedulesWaitingForTheSlotShareOneWrite() async throws {
        let writer = ScriptedWriter()
        let ids = (0..<40).map { "m\($0)" }
        let results = try await throughOneSlot(first: "head", waiting: ids, writer: writer)
        #expect(results.values.allSatisfy { (try? $0.get()) != nil })
        #expect(writer.log.withLock { $0.batches.map { Set($0) } } == [Set(ids)])
    }

    // MARK: The batch SQL (PostgreSQL)

    @Test(.enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
    func oneKeyManyTimesInOneBatchKeepsTheLastArrival() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            let store = try await PostgresStore.open(configuration)
            let batch = [
                makeMessage(id: "k-1", key: "k"), makeMessage(id: "other", key: "o"),
                makeMessage(id: "k-2", key: "k"), makeMessage(id: "nokey", key: nil), makeMessage(id: "k-3", key: "k"),
            ].map { (message: $0, deadline: ContinuousClock.Instant?.none) }
            let outcomes = try await store.scheduleBatch(batch)
            let superseded = outcomes.map { outcome -> String? in
                if case .scheduled(_, let id)? = outcome { return id ?? "-" }
                return nil
            }
            #expect(superseded == ["-", "-", "k-1", "-", "k-2"])
            #expect(try await store.countsByState() == [.scheduled: 3, .superseded: 2])
            #expect(try await store.message(bundleID: "com.example.app", idempotencyKey: "k")?.id == "k-3")
            await closeInTime(store)
        }
    }

    @Test(.enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
    func aMemberPastItsDeadlineIsNotWritten() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            let store = try await PostgresStore.open(configuration)
            let past = ContinuousClock.now - .seconds(1)
            let outcomes = try await store.scheduleBatch([
                (message: makeMessage(id: "late", key: "late"), deadline: past),
                (message: makeMessage(id: "fine", key: "fine"), deadline: nil),
            ])
            #expect(outcomes.first! == nil && outcomes.last! != nil)
            #expect(try await store.message(id: "late") == nil)
            #expect(try await store.message(bundleID: "com.example.app", idempotencyKey: "late") == nil)
            #expect(try await store.message(id: "fine")?.state == .scheduled)
            await closeInTime(store)
        }
    }

    @Test(.enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
    func concurrentBatchesOnTwoReplicasLeaveOneLiveMessagePerKey() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            let a = try await PostgresStore.open(configuration), b = try await PostgresStore.open(configuration)
            let messages = (0..<300).map { i in
                makeMessage(id: String(format: "m-%03d", i), key: "key-\(i % 30)", createdAt: now + Int64(i))
            }
            let outcomes = try await withThrowingTaskGroup(of: ScheduleOutcome.self) { group in
                for (i, message) in messages.enumerated() {
                    let store = i % 2 == 0 ? a : b
                    group.addTask { try await store.schedule(message) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.count == 300)
            #expect(try await a.countsByState() == [.scheduled: 30, .superseded: 270])
            let superseded = outcomes.compactMap { outcome -> String? in
                if case .scheduled(_, let id) = outcome { return id }
                return nil
            }
            #expect(superseded.count == 270 && Set(superseded).count == 270)
            await closeInTime(a)
            await closeInTime(b)
        }
    }

    @Test(.enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
    func concurrentDeviceReadsEachGetTheirOwnUsersDevices() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            let store = try await PostgresStore.open(configuration)
            // User i has i % 4 devices (user 0, 4, ...: none); one Android device shares user 1's id.
            for i in 0..<40 {
                for d in 0..<(i % 4) {
                    _ = try await store.registerDevice(Device(
                        bundleID: "com.example.app", platform: .ios, userID: "u\(i)", deviceToken: "t\(i)-\(d)",
                        locale: "en", timezone: "UTC", environment: .sandbox, registeredAt: now, updatedAt: now))
                }
            }
            _ = try await store.registerDevice(Device(
                bundleID: "com.example.app", platform: .android, userID: "u1", deviceToken: "fcm-u1",
                locale: "en", timezone: "UTC", environment: nil, registeredAt: now, updatedAt: now))
            let found = try await withThrowingTaskGroup(of: (Int, [String]).self) { group in
                for _ in 0..<3 {
                    for i in 0..<40 {
                        group.addTask {
                            (i, try await store.devices(bundleID: "com.example.app", platform: .ios, userID: "u\(i)")
                                .map(\.deviceToken))
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(found.count == 120)
            for (i, tokens) in found {
                #expect(tokens == (0..<(i % 4)).map { "t\(i)-\($0)" }, "user u\(i)")
            }
            #expect(try await store.devices(bundleID: "com.example.app", platform: .android, userID: "u1").map(\.deviceToken)
                        == ["fcm-u1"])
            await closeInTime(store)
        }
    }
}
