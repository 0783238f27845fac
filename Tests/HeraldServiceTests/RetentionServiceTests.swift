import HeraldCore
import HeraldStorage
import HeraldTestSupport
import Logging
import ServiceLifecycle
import Testing

@testable import HeraldService

/// The retention loop on a manual clock against the real store.
@Suite("Retention service", .timeLimit(.minutes(1)))
struct RetentionServiceTests {
    static let t0: Int64 = 1_800_000_000_000
    static let hour: Int64 = 3_600_000
    static let day: Int64 = 86_400_000

    static func message(_ id: String, at: Int64) -> StoredMessage {
        StoredMessage(
            id: id, bundleID: "com.example.retention", platform: .ios, userID: "u1", campaignID: "c",
            idempotencyKey: "key-\(id)", deliveryMethod: .traditional, abTest: false,
            windowStart: at, windowEnd: at + hour, dueAt: at + hour, request: Array("r".utf8), createdAt: at)
    }

    /// Schedules `id` at `at` and, unless `waiting`, expires it then.
    static func add(_ store: SQLiteStore, _ id: String, at: Int64, waiting: Bool = false) async throws {
        _ = try await store.schedule(message(id, at: at))
        if !waiting {
            let changed = try await store.transition(
                id: id, from: .scheduled, to: .expired, dueAt: nil, providerMessageID: nil, lastError: nil, now: at)
            #expect(changed)
        }
    }

    @Test("a pass per interval on the injected clock: nothing before the period ends, then all due rows in bounded batches")
    func prunesOnTheClock() async throws {
        try await withTemporaryDirectory(prefix: "herald-retention") { directory in
            let store = try SQLiteStore(path: "\(directory)/herald.sqlite")
            let (t0, day, hour) = (Self.t0, Self.day, Self.hour)
            for i in 0..<25 { try await Self.add(store, "old-\(i)", at: t0) }
            for i in 0..<3 { try await Self.add(store, "waiting-\(i)", at: t0 - 10 * day, waiting: true) }
            try await Self.add(store, "newer", at: t0 + day)

            let clock = ManualClock(now: t0 + hour)
            var policy = RetentionPolicy()
            policy.periodMilliseconds = 2 * day
            policy.batchSize = 10
            policy.pauseBetweenBatches = .zero
            #expect(policy.passIntervalMilliseconds == 60_000)
            let (passes, sink) = AsyncStream.makeStream(of: RetentionPass.self)
            let logger = Logger(label: "retention-test")
            let service = RetentionService(
                store: store, policy: policy, clock: clock, logger: logger, observer: { sink.yield($0) })
            let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [service], logger: logger))
            try await withThrowingTaskGroup(of: Void.self) { children in
                children.addTask { try await group.run() }
                var next = passes.makeAsyncIterator()

                let first = try #require(await next.next())
                #expect(first == RetentionPass(cutoff: t0 + hour - 2 * day, messages: 0, outcomes: 0, batches: 1))

                // Past the period for the 25 (finished at t0), not for "newer".
                // Only once the service sleeps: advanced before it read the
                // clock, it would plan its next pass an interval later
                // (a loaded CI machine hung here, stop 33).
                while clock.sleeperCount < 1 { await Task.yield() }
                clock.advance(to: t0 + 2 * day + 1)
                let second = try #require(await next.next())
                #expect(second == RetentionPass(cutoff: t0 + 1, messages: 25, outcomes: 0, batches: 3))

                while clock.sleeperCount < 1 { await Task.yield() }
                clock.advance(to: t0 + 3 * day + 1)
                let third = try #require(await next.next())
                #expect(third.messages == 1 && third.batches == 1)

                await group.triggerGracefulShutdown()
                try await children.waitForAll()
            }
            sink.finish()
            for i in 0..<25 { #expect(try await store.message(id: "old-\(i)") == nil) }
            #expect(try await store.message(id: "newer") == nil)
            for i in 0..<3 { #expect(try await store.message(id: "waiting-\(i)")?.state == .scheduled) }
            await store.close()
        }
    }

    @Test("a failing write ends the pass with its error; the loop goes on at the next interval")
    func failedPassIsRetried() async throws {
        try await withTemporaryDirectory(prefix: "herald-retention") { directory in
            let store = try SQLiteStore(path: "\(directory)/herald.sqlite")
            try await Self.add(store, "old", at: Self.t0)
            await store.close()  // every write now throws StoreError.closed
            var policy = RetentionPolicy()
            policy.periodMilliseconds = Self.day
            let service = RetentionService(
                store: store, policy: policy, clock: ManualClock(now: Self.t0 + 2 * Self.day),
                logger: Logger(label: "retention-test"))
            let pass = await service.pass(now: Self.t0 + 2 * Self.day)
            #expect(pass.messages == 0 && pass.batches == 0)
            #expect(pass.error?.contains("closed") == true)
        }
    }
}
