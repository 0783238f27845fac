import GRPCEngine
import HeraldCore
import HeraldProtos
import HeraldStorage
import Synchronization
import Testing

@testable import HeraldService

/// StreamEvents' handler over a scripted log (the stores' own logs are the
/// store contract's): requests checked hostile first, a resumed stream gets
/// every later event exactly once, retention's OUT_OF_RANGE at the start
/// and mid-stream, filters passed to the log, the bound on open streams, and
/// flow control (a consumer that does not read stops the reads). Waits are on
/// events (the `sleep` between polls is the test's), never on time.
@Suite("StreamEvents", .timeLimit(.minutes(1)))
struct StreamEventsTests {
    /// A log the test fills; reads are counted, `pruned` set by the test.
    final class ScriptedLog: DeliveryEventLog {
        private struct State {
            var events: [DeliveryEvent] = []
            var pruned: EventCursor?
            var reads = 0
            var filters: [EventFilter] = []
        }
        private let state = Mutex(State())

        func append(_ count: Int, kind: EventKind = .sent, campaign: String = "c") {
            state.withLock { state in
                for _ in 0..<count {
                    let n = Int64(state.events.count + 1)
                    state.events.append(DeliveryEvent(
                        cursor: EventCursor(major: n), at: 1_800_000_000_000 + n, kind: kind, bundleID: "com.example.app",
                        messageID: "m\(n)", idempotencyKey: "k\(n)", userID: "u", campaignID: campaign, platform: .ios,
                        deviceToken: kind == .deviceRemoved ? "ab" : nil))
                }
            }
        }

        func prune(through cursor: EventCursor) { state.withLock { $0.pruned = cursor } }
        var reads: Int { state.withLock { $0.reads } }
        var filters: [EventFilter] { state.withLock { $0.filters } }

        func events(bundleID: String, after cursor: EventCursor?, filter: EventFilter, limit: Int) async throws -> EventPage {
            state.withLock { state in
                state.reads += 1
                state.filters.append(filter)
                let later = state.events.filter { e in
                    e.bundleID == bundleID && (cursor.map { e.cursor > $0 } ?? true) && (state.pruned.map { e.cursor > $0 } ?? true)
                }
                let examined = Array(later.prefix(limit))
                return EventPage(events: examined.filter(filter.matches), reached: examined.last?.cursor)
            }
        }

        func latestEventCursor(bundleID: String) async throws -> EventCursor? {
            state.withLock { $0.events.last?.cursor }
        }

        func prunedEventCursor(bundleID: String) async throws -> EventCursor? {
            state.withLock { $0.pruned }
        }
    }

    /// The polls' sleeps: each waits until the test releases it (a release
    /// with nobody asleep is kept for the next sleep).
    final class Polls: Sendable {
        private struct State {
            var sleepers: [CheckedContinuation<Void, Never>] = []
            var observers: [CheckedContinuation<Void, Never>] = []
            var permits = 0
        }
        private let state = Mutex(State())

        func sleep() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let (pass, observers) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                    if state.permits > 0 {
                        state.permits -= 1
                        return (true, [])
                    }
                    state.sleepers.append(continuation)
                    defer { state.observers = [] }
                    return (false, state.observers)
                }
                if pass { continuation.resume() }
                for observer in observers { observer.resume() }
            }
        }

        /// Returns once a stream sleeps (it has caught up).
        func next() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if !state.sleepers.isEmpty { return true }
                    state.observers.append(continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        }

        func release() {
            let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                if state.sleepers.isEmpty { state.permits += 1 }
                defer { state.sleepers = [] }
                return state.sleepers
            }
            for continuation in waiting { continuation.resume() }
        }
    }

    static func request(cursor: String = "", fromStart: Bool = false, campaign: String = "", kinds: [Herald__V1__EventKind] = [],
                        bundle: String = "com.example.app") -> [UInt8] {
        let arena = CArena()
        var request = Herald__V1__StreamEventsRequest.initialized()
        request.bundle_id = arena.string(bundle)
        request.cursor = arena.string(cursor)
        request.from_start = fromStart ? 1 : 0
        request.campaign_id = arena.string(campaign)
        var kinds = kinds
        return kinds.withUnsafeMutableBufferPointer { buffer in
            request.n_kinds = buffer.count
            request.kinds = buffer.baseAddress
            return withExtendedLifetime(arena) { ProtobufC.pack(&request) }
        }
    }

    struct Received: Sendable {
        var cursor: String
        var messageID: String
    }

    /// Runs a stream; what it sends goes to the returned iterator.
    static func start(
        _ log: ScriptedLog, _ message: [UInt8], polls: Polls, slots: StreamSlots = StreamSlots(capacity: 4),
        gate: (@Sendable () async -> Void)? = nil
    ) -> (sent: AsyncStream<Received>.Iterator, task: Task<Void, any Error>) {
        let (stream, sink) = AsyncStream.makeStream(of: Received.self)
        let service = StreamEventsService(policy: AccessPolicy(), log: log, slots: slots, pollInterval: .milliseconds(100)) { _ in
            await polls.sleep()
            try Task.checkCancellation()
        }
        let task = Task {
            defer { sink.finish() }
            try await service.stream(GRPCRequest(path: StreamEventsService.path, message: message)) { page in
                for bytes in page {
                    try Task.checkCancellation()  // as the engine's writer: a cancelled stream sends nothing more
                    let received = try ProtobufC.withUnpacked(Herald__V1__DeliveryEvent.self, from: bytes) {
                        Received(cursor: String(cString: $0.cursor), messageID: String(cString: $0.message_id))
                    }
                    sink.yield(received)
                    await gate?()
                }
            }
        }
        return (stream.makeAsyncIterator(), task)
    }

    static func status(of task: Task<Void, any Error>) async -> GRPCStatus.Code? {
        do {
            try await task.value
            return nil
        } catch let status as GRPCStatus {
            return status.code
        } catch {
            return nil
        }
    }

    // MARK: Hostile first

    @Test(arguments: [
        ("", "bundle_id"), ("e2.1.0", "cursor"), ("e1.-1.0", "cursor"), ("e1.1", "cursor"), ("e1.1.0.0", "cursor"),
        ("e1.99999999999999999999.0", "cursor"), ("e1. 1.0", "cursor"), ("e1.1.x", "cursor"),
        (String(repeating: "9", count: 100), "cursor"),
    ])
    func badRequestsAreInvalidArgumentNamingTheField(_ cursor: String, _ field: String) {
        let message = Self.request(cursor: cursor.isEmpty ? "" : cursor, bundle: cursor.isEmpty ? "" : "com.example.app")
        #expect {
            try StreamEventsService.decode(message)
        } throws: { error in
            guard let error = error as? ValidationError else { return false }
            return error.violations.contains { $0.field == field }
        }
    }

    @Test func unknownKindsTooManyKindsAndCursorWithFromStartAreRefused() {
        let unknown = Herald__V1__EventKind(rawValue: 99)
        #expect(throws: ValidationError.self) { try StreamEventsService.decode(Self.request(kinds: [unknown])) }
        #expect(throws: ValidationError.self) {
            try StreamEventsService.decode(Self.request(kinds: [HERALD__V1__EVENT_KIND__EVENT_KIND_UNSPECIFIED]))
        }
        let many = Array(repeating: HERALD__V1__EVENT_KIND__EVENT_KIND_SENT, count: 31)
        #expect(throws: ValidationError.self) { try StreamEventsService.decode(Self.request(kinds: many)) }
        #expect(throws: ValidationError.self) { try StreamEventsService.decode(Self.request(cursor: "e1.1.0", fromStart: true)) }
        #expect(throws: ValidationError.self) {
            try StreamEventsService.decode(Self.request(campaign: String(repeating: "c", count: 129)))
        }
        let ok = try? StreamEventsService.decode(Self.request(campaign: "c", kinds: [HERALD__V1__EVENT_KIND__EVENT_KIND_SENT]))
        #expect(ok?.filter == EventFilter(campaignID: "c", kinds: [.sent]))
    }

    @Test func cursorTextRoundTrips() {
        for cursor in [EventCursor(major: 0), EventCursor(major: 42, minor: 7), EventCursor(major: .max, minor: .max)] {
            #expect(EventCursorText.parse(EventCursorText.format(cursor)) == cursor)
        }
    }

    /// Retention deleted events after the cursor: OUT_OF_RANGE, nothing sent.
    @Test func aCursorOlderThanRetentionIsOutOfRange() async {
        let (log, polls) = (ScriptedLog(), Polls())
        log.append(10)
        log.prune(through: EventCursor(major: 5))
        let (_, task) = Self.start(log, Self.request(cursor: "e1.3.0"), polls: polls)
        #expect(await Self.status(of: task) == .outOfRange)
        // At the watermark itself nothing was lost.
        let (sent, ok) = Self.start(log, Self.request(cursor: "e1.5.0"), polls: polls)
        var iterator = sent
        #expect(await iterator.next()?.messageID == "m6")
        ok.cancel()
    }

    /// A consumer behind when retention prunes past its position is stopped
    /// with OUT_OF_RANGE, not silently moved on.
    @Test func aConsumerOvertakenByRetentionIsOutOfRange() async {
        let (log, polls) = (ScriptedLog(), Polls())
        log.append(2)
        var (sent, task) = Self.start(log, Self.request(fromStart: true), polls: polls)
        #expect(await sent.next()?.messageID == "m1")
        #expect(await sent.next()?.messageID == "m2")
        await polls.next()
        log.append(3)
        log.prune(through: EventCursor(major: 4))
        polls.release()
        #expect(await Self.status(of: task) == .outOfRange)
    }

    /// The bound: a stream past it is RESOURCE_EXHAUSTED; a closed one frees its place.
    @Test func streamsPastTheBoundAreResourceExhausted() async {
        let (log, polls, slots) = (ScriptedLog(), Polls(), StreamSlots(capacity: 1))
        let (_, first) = Self.start(log, Self.request(), polls: polls, slots: slots)
        await polls.next()
        let (_, second) = Self.start(log, Self.request(), polls: polls, slots: slots)
        #expect(await Self.status(of: second) == .resourceExhausted)
        first.cancel()
        polls.release()
        _ = await Self.status(of: first)
        #expect(slots.count == 0)
    }

    /// A consumer that does not read: the handler stays in `send`, reads no
    /// further page, however many events follow.
    @Test func aConsumerThatDoesNotReadStopsTheReads() async {
        let (log, polls) = (ScriptedLog(), Polls())
        log.append(StreamEventsService.pageSize * 4)
        let blocked = Mutex<CheckedContinuation<Void, Never>?>(nil)
        let (stream, entered) = AsyncStream.makeStream(of: Void.self)
        let (_, task) = Self.start(log, Self.request(fromStart: true), polls: polls) {
            await withCheckedContinuation { continuation in
                blocked.withLock { $0 = continuation }
                entered.yield()
            }
        }
        var waits = stream.makeAsyncIterator()
        _ = await waits.next()
        #expect(log.reads == 1)
        task.cancel()
        blocked.withLock { $0?.resume() }
        _ = await Self.status(of: task)
        #expect(log.reads == 1)
    }

    // MARK: Resumption, filters, live

    /// A consumer that reconnects after every 3 events with its last cursor
    /// gets 1…20 exactly once, in order.
    @Test func resumingWithTheLastCursorGetsEveryLaterEventOnce() async {
        let (log, polls) = (ScriptedLog(), Polls())
        log.append(20)
        var got: [String] = []
        var cursor = ""
        while got.count < 20 {
            var (sent, task) = Self.start(log, cursor.isEmpty ? Self.request(fromStart: true) : Self.request(cursor: cursor), polls: polls)
            for _ in 0..<3 where got.count < 20 {
                guard let event = await sent.next() else { break }
                got.append(event.messageID)
                cursor = event.cursor
            }
            task.cancel()
            polls.release()
            _ = await Self.status(of: task)
        }
        #expect(got == (1...20).map { "m\($0)" })
    }

    /// No cursor: from now on, not the past; filters go to the log.
    @Test func noCursorStartsAtTheEndAndFiltersReachTheLog() async {
        let (log, polls) = (ScriptedLog(), Polls())
        log.append(5)
        var (sent, task) = Self.start(
            log, Self.request(campaign: "c2", kinds: [HERALD__V1__EVENT_KIND__EVENT_KIND_DEVICE_REMOVED]), polls: polls)
        await polls.next()
        log.append(2, kind: .sent, campaign: "c2")
        log.append(1, kind: .deviceRemoved, campaign: "c1")
        log.append(1, kind: .deviceRemoved, campaign: "c2")
        polls.release()
        #expect(await sent.next()?.messageID == "m9")
        #expect(log.filters.allSatisfy { $0 == EventFilter(campaignID: "c2", kinds: [.deviceRemoved]) })
        task.cancel()
        polls.release()
        _ = await Self.status(of: task)
    }
}
