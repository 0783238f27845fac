import APNs
import APNsSimulation
import Foundation
import HeraldPrimitives
import HeraldTestSupport
import Testing

/// Every timer the APNs client arms runs on its injected clock: a manual
/// clock alone fires request deadlines (in flight and queued), response
/// timeouts, reconnect backoff and keep-alive, with no wall-clock wait.
@Suite("APNs timers on the injected clock", .timeLimit(.minutes(1)))
struct APNsClockTests {
    /// A hung endpoint (answers nothing for `deviceToken`), a client on a manual clock.
    func withHungEndpoint(
        streams: Int = 100, _ body: (APNsSimulator, APNsClient, ManualAPNsClock) async throws -> Void
    ) async throws {
        let key = try TestKey()
        let simulator = try await APNsSimulator.start(simulatorConfiguration(key))
        simulator.updateFaults { $0.hang = [deviceToken] }
        let clock = ManualAPNsClock(autoAdvance: false)
        var configuration = clientConfiguration(key, simulator: simulator, clock: clock)
        configuration.responseTimeout = .seconds(30)
        configuration.maxConnections = 1
        configuration.maxConcurrentStreamsPerConnection = streams
        let client = try APNsClient(configuration: configuration)
        try await body(simulator, client, clock)
        await client.shutdown()
        try await simulator.stop()
    }

    @Test("A deadline passing on the manual clock resets the stream in flight (before the response timeout)")
    func deadlineInFlight() async throws {
        try await withHungEndpoint { simulator, client, clock in
            let events = simulator.events()
            let pending = Task { try await client.send(alertRequest(deadline: clock.now().addingTimeInterval(10))) }
            for await event in events {
                if case .requestHeld = event { break }
            }
            await clock.waitForTimers(3)  // the connection's keep-alive, the response timeout, the deadline
            clock.advance(by: .seconds(9))
            #expect(clock.pendingTimers == 3)  // nothing fired early
            clock.advance(by: .seconds(1))
            await #expect(throws: APNsError.deadlineExceeded) { try await pending.value }
            #expect(clock.pendingTimers == 1)  // the response timer went with the stream; the keep-alive stays
            #expect(simulator.deliveredCount == 0)
        }
    }

    @Test("Hung streams started apart each time out one response timeout after their own start (one timer per connection)")
    func responseTimeoutsInStartOrder() async throws {
        try await withHungEndpoint { simulator, client, clock in
            var events = simulator.events().makeAsyncIterator()
            func held() async {
                while let event = await events.next() {
                    if case .requestHeld = event { return }
                }
            }
            var request = alertRequest()
            request.singleAttempt = true  // the timeout is returned, not retried
            let first = Task { [request] in try await client.send(request) }
            await held()
            await clock.waitForTimers(2)  // the keep-alive, the response timeout
            clock.advance(by: .seconds(10))
            let second = Task { [request] in try await client.send(request) }
            await held()
            #expect(clock.pendingTimers == 2)  // no timer per stream
            clock.advance(by: .seconds(20))  // 30 s after the first started
            await #expect(throws: APNsError.responseTimeout) { try await first.value }
            await clock.waitForTimers(2)  // re-armed for the second
            clock.advance(by: .seconds(9))
            #expect(await client.status().streamsInFlight == 1)  // the second is not due yet
            clock.advance(by: .seconds(1))  // 30 s after the second started
            await #expect(throws: APNsError.responseTimeout) { try await second.value }
            #expect(clock.pendingTimers == 1)  // nothing open: only the keep-alive stays
            #expect(simulator.deliveredCount == 0)
        }
    }

    @Test("A queued request's deadline fires on the manual clock while the stream ahead of it hangs")
    func deadlineQueued() async throws {
        try await withHungEndpoint(streams: 1) { simulator, client, clock in
            let events = simulator.events()
            let first = Task { try await client.send(alertRequest(deadline: clock.now().addingTimeInterval(3600))) }
            for await event in events {
                if case .requestHeld = event { break }
            }
            await clock.waitForTimers(3)  // keep-alive, the first's response timeout and deadline
            let queued = Task { try await client.send(alertRequest(deadline: clock.now().addingTimeInterval(5))) }
            await clock.waitForTimers(4)  // the queued one's deadline
            clock.advance(by: .seconds(5))
            await #expect(throws: APNsError.deadlineExceeded) { try await queued.value }
            #expect(clock.pendingTimers == 3)  // the first is still in flight
            first.cancel()
            await #expect(throws: (any Error).self) { try await first.value }
        }
    }

    @Test("Reconnect backoff is a timer on the clock: it waits for the clock, and shutdown cancels it")
    func reconnectTimer() async throws {
        let key = try TestKey()
        let simulator = try await APNsSimulator.start(simulatorConfiguration(key))
        let port = simulator.port
        try await simulator.stop()  // nothing listens: connects are refused
        let clock = ManualAPNsClock(autoAdvance: false)
        var configuration = clientConfiguration(key, simulator: simulator, clock: clock)
        configuration.endpoint = APNsEndpoint(host: "127.0.0.1", port: port)
        configuration.maxConnections = 1
        configuration.maxAttempts = 1
        let client = try APNsClient(configuration: configuration)
        await #expect(throws: (any Error).self) { try await client.send(alertRequest()) }
        #expect(await clock.nextWait() == .seconds(1))  // the reconnect backoff, armed
        #expect(clock.pendingTimers == 1)
        #expect(clock.sleeps.isEmpty)
        await client.shutdown()
        #expect(clock.pendingTimers == 0)
    }
}
