import GRPCEngine
import HeraldCore
import HeraldProtos
import HeraldStorage
import Synchronization
import Testing

@testable import HeraldService

/// The shared tail of a bundle's event log (``EventTail``): many unfiltered
/// streams cost one read per stretch, each still gets every event exactly
/// once and in order (also while the log grows), the memory kept is bounded,
/// a failed read reaches the streams waiting for it and the next page reads
/// again, and a tail lives only while a stream uses it.
@Suite("EventTail", .timeLimit(.minutes(1)))
struct EventTailTests {
    typealias Log = StreamEventsTests.ScriptedLog

    struct Enough: Error {}
    struct Slept: Error {}

    /// A log whose next reads fail while `failing` is set.
    final class FlakyLog: DeliveryEventLog {
        let inner = Log()
        let failing = Mutex(false)
        struct Down: Error {}

        func events(bundleID: String, after cursor: EventCursor?, filter: EventFilter, limit: Int) async throws -> EventPage {
            if failing.withLock({ $0 }) { throw Down() }
            return try await inner.events(bundleID: bundleID, after: cursor, filter: filter, limit: limit)
        }
        func latestEventCursor(bundleID: String) async throws -> EventCursor? { try await inner.latestEventCursor(bundleID: bundleID) }
        func prunedEventCursor(bundleID: String) async throws -> EventCursor? { try await inner.prunedEventCursor(bundleID: bundleID) }
    }

    /// Runs one stream on `service` until it has `count` events; the message ids it got, in order.
    static func collect(
        _ service: StreamEventsService, cursor: String, count: Int
    ) -> Task<[String], any Error> {
        Task {
            let got = Mutex<[String]>([])
            do {
                try await service.stream(GRPCRequest(path: StreamEventsService.path,
                                                     message: StreamEventsTests.request(cursor: cursor))) { page in
                    let ids = try page.map { bytes in
                        try ProtobufC.withUnpacked(Herald__V1__DeliveryEvent.self, from: bytes) { String(cString: $0.message_id) }
                    }
                    let total = got.withLock { got in
                        got += ids
                        return got.count
                    }
                    if total >= count { throw Enough() }
                }
            } catch is Enough {}
            return got.withLock { $0 }
        }
    }

    @Test func tenStreamsFromOnePositionShareTheReads() async throws {
        let log = Log()
        log.append(3000)
        // A stream that sleeps has caught up without all its events: a failure.
        let service = StreamEventsService(policy: AccessPolicy(), log: log, slots: StreamSlots(capacity: 16),
                                          pollInterval: .zero) { _ in throw Slept() }
        let streams = (0..<10).map { _ in Self.collect(service, cursor: "e1.0.0", count: 3000) }
        for stream in streams {
            #expect(try await stream.value == (1...3000).map { "m\($0)" })
        }
        // Alone, each stream reads 3000 / 256 pages: 120 reads for ten. Shared:
        // 3000 / 1024 stretches, plus a stream restarting the stretch when it
        // finds itself ahead of it.
        #expect(log.reads <= 12, "reads: \(log.reads)")
        #expect(service.tails.count == 0)
    }

    @Test func streamsFollowingAGrowingLogGetEveryEventOnceInOrder() async throws {
        let log = Log()
        log.append(1)
        let total = 5000
        let service = StreamEventsService(policy: AccessPolicy(), log: log, slots: StreamSlots(capacity: 16),
                                          pollInterval: .zero) { _ in await Task.yield() }
        let streams = (0..<4).map { _ in Self.collect(service, cursor: "e1.1.0", count: total - 1) }
        // The log grows in uneven steps while the streams read.
        var appended = 1
        var step = 1
        while appended < total {
            let n = min(step, total - appended)
            log.append(n)
            appended += n
            step = step % 700 + 37
            await Task.yield()
        }
        for stream in streams {
            #expect(try await stream.value == (2...total).map { "m\($0)" })
        }
    }

    @Test func theTailKeepsABoundedStretchAndSendsLaggardsToTheLog() async throws {
        let log = Log()
        log.append(5000)
        let tail = EventTail(bundleID: "com.example.app", log: log, maxBytes: 8 << 10)
        var position = EventCursor(major: 0)
        var served = 0
        while served < 5000 {
            let page = try #require(try await tail.page(after: position, limit: 256))
            served += page.events.count
            position = try #require(page.reached)
            // 8 KiB of events (each ≥ 20 bytes encoded) and the last read.
            #expect(await tail.count <= (8 << 10) / 20 + EventTail.readLimit)
        }
        #expect(position == EventCursor(major: 5000))
        // Event 1 left long ago: a stream there reads the log itself.
        #expect(try await tail.page(after: EventCursor(major: 1), limit: 256) == nil)
        // No position yet (from the start): the log itself, too.
        #expect(try await tail.page(after: nil, limit: 256) == nil)
        #expect(await tail.count <= EventTail.maxEvents)
    }

    @Test func aFailedReadReachesTheStreamAndTheNextPageReadsAgain() async throws {
        let log = FlakyLog()
        log.inner.append(10)
        let tail = EventTail(bundleID: "com.example.app", log: log, maxBytes: 1 << 20)
        log.failing.withLock { $0 = true }
        await #expect(throws: FlakyLog.Down.self) { try await tail.page(after: EventCursor(major: 0), limit: 256) }
        log.failing.withLock { $0 = false }
        let page = try #require(try await tail.page(after: EventCursor(major: 0), limit: 256))
        #expect(page.events.count == 10)
        #expect(page.reached == EventCursor(major: 10))
    }

    @Test func aStreamAheadOfTheStretchStartsANewOne() async throws {
        let log = Log()
        log.append(100)
        let tail = EventTail(bundleID: "com.example.app", log: log, maxBytes: 1 << 20)
        let first = try #require(try await tail.page(after: EventCursor(major: 0), limit: 10))
        #expect(first.reached == EventCursor(major: 10))
        log.append(50)
        // At 120, ahead of the stretch (0, 100]: a new stretch from 120.
        let ahead = try #require(try await tail.page(after: EventCursor(major: 120), limit: 256))
        #expect(ahead.events.count == 30)
        #expect(ahead.reached == EventCursor(major: 150))
        // The first position is now behind the stretch: the log itself.
        #expect(try await tail.page(after: EventCursor(major: 10), limit: 256) == nil)
    }

    @Test func tailsLiveWhileTheirStreamsDo() {
        let tails = EventTails(log: Log(), budget: 1 << 20)
        let a = tails.enter("a")
        let again = tails.enter("a")
        _ = tails.enter("b")
        #expect(a === again)
        #expect(tails.count == 2)
        tails.leave("a")
        #expect(tails.count == 2)
        tails.leave("a")
        tails.leave("b")
        #expect(tails.count == 0)
        tails.leave("never")  // unknown: nothing happens
        #expect(tails.count == 0)
    }
}
