import GRPCEngine
import HeraldProtos
import Testing

@testable import HeraldService

/// Health/Watch driven in memory: the handler's `send` feeds a stream the
/// test reads, and every wait is on an event, never on time.
@Suite("Health/Watch", .timeLimit(.minutes(1)))
struct HealthWatchTests {
    typealias Status = Grpc__Health__V1__HealthCheckResponse__ServingStatus
    static let serving = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING
    static let notServing = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING
    static let unknown = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVICE_UNKNOWN

    /// Holds the watcher after each send until the test lets it go, so the
    /// test can change the state while the watcher is busy.
    actor Gate {
        private var permits = 0
        private var waiter: CheckedContinuation<Void, Never>?

        func pass() async {
            if permits > 0 { permits -= 1; return }
            await withCheckedContinuation { waiter = $0 }
        }

        func release() {
            if let waiter { self.waiter = nil; waiter.resume() } else { permits += 1 }
        }
    }

    static func request(_ service: String) -> [UInt8] {
        let arena = CArena()
        var request = Grpc__Health__V1__HealthCheckRequest.initialized()
        request.service = arena.string(service)
        return withExtendedLifetime(arena) { ProtobufC.pack(&request) }
    }

    /// Starts a watch of `service`: the statuses it sends, in order (the
    /// stream ends when the handler returns), and the handler's task.
    static func watch(
        _ cell: ServingStateCell, _ service: String = "", gate: Gate? = nil
    ) -> (sent: AsyncStream<Status>.Iterator, task: Task<Void, any Error>) {
        let (stream, sink) = AsyncStream.makeStream(of: Status.self)
        let handler = HealthWatchService(state: cell)
        let request = service.isEmpty ? [] : Self.request(service)
        let task = Task {
            defer { sink.finish() }
            try await handler.watch(request: request) { bytes in
                sink.yield(try ProtobufC.withUnpacked(Grpc__Health__V1__HealthCheckResponse.self, from: bytes) { $0.status })
                await gate?.pass()
            }
        }
        return (stream.makeAsyncIterator(), task)
    }

    @Test func currentStatusAtOnceThenEveryChangeThenEndsOnDrain() async throws {
        let cell = ServingStateCell(.serving)
        var (sent, task) = Self.watch(cell)
        #expect(await sent.next() == Self.serving)
        cell.set(.starting)
        #expect(await sent.next() == Self.notServing)
        cell.set(.serving)
        #expect(await sent.next() == Self.serving)
        // No change, no message: the next one is the drain's.
        cell.set(.serving)
        cell.set(.draining)
        #expect(await sent.next() == Self.notServing)
        #expect(await sent.next() == nil)
        try await task.value
        #expect(cell.watcherCount == 0)
    }

    @Test("a Herald service name is watched like the empty name", arguments: ["herald.v1.PushService", "grpc.health.v1.Health"])
    func namedService(service: String) async throws {
        let cell = ServingStateCell(.starting)
        var (sent, task) = Self.watch(cell, service)
        #expect(await sent.next() == Self.notServing)
        cell.set(.serving)
        #expect(await sent.next() == Self.serving)
        task.cancel()
        try await task.value
    }

    @Test func aSlowWatcherGetsOnlyTheLatestStatus() async throws {
        let cell = ServingStateCell(.serving)
        let gate = Gate()
        var (sent, task) = Self.watch(cell, gate: gate)
        #expect(await sent.next() == Self.serving)
        // The watcher is held in its first send; three changes coalesce.
        cell.set(.starting)
        cell.set(.serving)
        cell.set(.starting)
        await gate.release()
        #expect(await sent.next() == Self.notServing)
        await gate.release()
        cell.set(.serving)
        #expect(await sent.next() == Self.serving)
        await gate.release()
        cell.set(.draining)
        #expect(await sent.next() == Self.notServing)
        await gate.release()
        #expect(await sent.next() == nil)
        try await task.value
    }

    @Test func endsCleanlyWhenCancelled() async throws {
        let cell = ServingStateCell(.serving)
        var (sent, task) = Self.watch(cell)
        #expect(await sent.next() == Self.serving)
        #expect(cell.watcherCount == 1)
        task.cancel()
        try await task.value
        #expect(await sent.next() == nil)
        #expect(cell.watcherCount == 0)
    }

    @Test func unknownServiceIsServiceUnknownAndStaysOpen() async throws {
        let cell = ServingStateCell(.serving)
        var (sent, task) = Self.watch(cell, "acme.Nope")
        #expect(await sent.next() == Self.unknown)
        #expect(Self.unknown.rawValue == 3)
        // Changes say nothing about an unknown name; the drain ends the stream.
        cell.set(.starting)
        cell.set(.serving)
        cell.set(.draining)
        #expect(await sent.next() == nil)
        try await task.value
    }

    @Test func garbageRequestIsInvalidArgumentBeforeAnyMessage() async throws {
        let handler = HealthWatchService(state: ServingStateCell(.serving))
        await #expect {
            try await handler.watch(request: [0x0A, 0x05, 0x61]) { _ in Issue.record("sent a message for a bad request") }
        } throws: { error in
            (error as? GRPCStatus)?.code == .invalidArgument
        }
    }

    @Test func changesStartWithTheCurrentStateAndCoalesce() async {
        let cell = ServingStateCell(.starting)
        let changes = cell.changes()
        cell.set(.serving)
        cell.set(.starting)
        cell.set(.serving)
        var iterator = changes.makeAsyncIterator()
        #expect(await iterator.next()?.state == .serving)
        cell.set(.draining)
        #expect(await iterator.next()?.state == .draining)
    }

    @Test func aStoreThatCannotBeWrittenIsNotServingUntilItCanAgain() async throws {
        let cell = ServingStateCell(.serving)
        let handler = HealthWatchService(state: cell)
        let sent = AsyncStream<[UInt8]>.makeStream()
        let task = Task {
            try await handler.watch(request: []) { sent.continuation.yield($0) }
        }
        var responses = sent.stream.makeAsyncIterator()
        #expect(await responses.next() == HealthWatchService.packed(GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING))
        #expect(cell.isReady)
        cell.setStoreWritable(false)
        #expect(!cell.isReady && cell.current == .serving)
        #expect(await responses.next() == HealthWatchService.packed(GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING))
        cell.setStoreWritable(true)
        #expect(await responses.next() == HealthWatchService.packed(GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING))
        task.cancel()
        _ = try? await task.value
    }
}
