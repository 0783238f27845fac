import HeraldCore
@testable import HeraldPostgres
@testable import HeraldStorage
import Synchronization
import Testing

/// Schedule on PostgreSQL without a Task per call (`CallbackScheduling`,
/// `PostgresBatcher.submit`): the callback form keeps the batcher's rules —
/// a call given up before its batch forms is written nowhere, the others
/// share one write, each completion runs exactly once — and the store's
/// callbacks answer what its async methods answer.
@Suite("PostgreSQL Schedule through callbacks", .storeCaseLimit)
struct PostgresCallbackTests {
    typealias ScriptedWriter = PostgresScheduleBatchTests.ScriptedWriter

    /// Completions by id, and a signal when `expected` of them arrived.
    final class Completions: Sendable {
        let results = Mutex<[String: [Result<ScheduleOutcome, any Error>]]>([:])
        let done = AsyncStream<Void>.makeStream()
        let expected: Int

        init(expected: Int) { self.expected = expected }

        func record(_ id: String) -> @Sendable (Result<ScheduleOutcome, any Error>) -> Void {
            { result in
                let count = self.results.withLock { results -> Int in
                    results[id, default: []].append(result)
                    return results.values.reduce(0) { $0 + $1.count }
                }
                if count == self.expected { self.done.continuation.yield() }
            }
        }

        func wait() async {
            var iterator = done.stream.makeAsyncIterator()
            _ = await iterator.next()
        }
    }

    @Test func aSubmittedCallGivenUpBeforeItsBatchIsWrittenNowhereAndTheRestShareOneWrite() async throws {
        let writer = ScriptedWriter()
        let (allQueued, queuedSignal) = AsyncStream<Void>.makeStream()
        let ids = (0..<30).map { "m\($0)" } + ["gone"]
        let batcher = PostgresBatcher<StoredMessage, ScheduleOutcome>(maximumBatch: 64, maximumInFlight: 1) { length in
            if length == ids.count { queuedSignal.yield() }
        }
        let head = Task { try await batcher.run(makeMessage(id: "head", key: "head"), writer: writer) }
        var entered = writer.entered.stream.makeAsyncIterator()
        _ = await entered.next()
        let completions = Completions(expected: ids.count)
        var calls: [String: PostgresBatcher<StoredMessage, ScheduleOutcome>.Pending] = [:]
        for id in ids {
            calls[id] = batcher.submit(makeMessage(id: id, key: id), deadline: nil, writer: writer,
                                       completion: completions.record(id))
        }
        var queued = allQueued.makeAsyncIterator()
        _ = await queued.next()
        calls["gone"]?.cancel()
        writer.release()
        _ = try await head.value
        await completions.wait()

        let results = completions.results.withLock { $0 }
        #expect(results.count == ids.count && results.values.allSatisfy { $0.count == 1 })
        #expect(throws: StoreError.abandoned) { try results["gone"]![0].get() }
        for id in ids.dropLast() {
            #expect(try results[id]![0].get() == .scheduled(makeMessage(id: id, key: id), supersededID: nil))
        }
        let log = writer.log.withLock { $0 }
        #expect(log.batches.map { Set($0) } == [Set(ids.dropLast())] && log.singles == ["head"])
    }

    @Test(.enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
    func callbackSchedulesKeepLastRequestWinsAndTheDeviceReadAnswersTheUsersDevices() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            let store = try await PostgresStore.open(configuration)
            _ = try await store.registerDevice(Device(
                bundleID: "com.example.app", platform: .ios, userID: "user-1", deviceToken: "t1",
                locale: "en", timezone: "UTC", environment: .sandbox, registeredAt: now, updatedAt: now))
            // 20 keys, each scheduled three times; concurrent batches have no
            // order among them, so one of the three stays live per key.
            let messages = (0..<60).map { makeMessage(id: String(format: "m%03d", $0), key: "k\($0 % 20)") }
            let completions = Completions(expected: messages.count)
            for message in messages {
                _ = store.schedule(message, deadline: nil, completion: completions.record(message.id))
            }
            await completions.wait()
            let results = completions.results.withLock { $0 }
            #expect(results.values.allSatisfy { $0.count == 1 && (try? $0[0].get()) != nil })
            for key in 0..<20 {
                let live = try await store.message(bundleID: "com.example.app", idempotencyKey: "k\(key)")
                #expect([key, key + 20, key + 40].map { String(format: "m%03d", $0) }.contains(live?.id ?? "none"))
                #expect(live?.state == .scheduled)
            }
            #expect(try await store.countsByState() == [.scheduled: 20, .superseded: 40])

            let (read, signal) = AsyncStream<[String]>.makeStream()
            store.devices(of: messages[0]) { devices in signal.yield(devices().map(\.deviceToken)) }
            store.devices(of: makeMessage(userID: "nobody")) { devices in signal.yield(devices().map(\.deviceToken)) }
            var reads = read.makeAsyncIterator()
            let first = await reads.next(), second = await reads.next()
            #expect(Set([first, second]) == Set([["t1"], []]))
            await store.close()
        }
    }

    @Test(.enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
    func freshAndOtherMessagesReadBackAsWritten() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            let store = try await PostgresStore.open(configuration)
            // Fresh rows take the fixed-text unnest statement; a batch with
            // one row that is not fresh takes the VALUES list.
            var fresh = (0..<5).map { makeMessage(key: $0 == 0 ? nil : "f\($0)", dueAt: now + Int64($0)) }
            fresh[1].request = []
            fresh[2].abTest = true
            var claimed = makeMessage(key: "c")
            claimed.sendingSince = now
            claimed.sendStartedAt = now
            claimed.pushStartedAt = now
            claimed.lastError = "boom"
            claimed.providerMessageID = "apns-1"
            claimed.attempts = 2
            #expect(fresh.allSatisfy(\.isFresh) && !claimed.isFresh)
            try await store.importMessages(fresh)
            try await store.importMessages([makeMessage(key: "other"), claimed])
            for message in fresh + [claimed] {
                #expect(try await store.message(id: message.id) == message)
            }
            await store.close()
        }
    }
}
