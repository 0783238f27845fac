import APNs
import APNsSimulation
import Foundation
import HeraldPrimitives
import HeraldTestSupport
import Testing

/// Retries bounded by the request's deadline (its TTL), not a count, with
/// full-jitter backoff on an injected clock; and the response timeout that
/// frees a request from a hung endpoint. Time is a manual clock throughout.
@Suite("APNs retries and response timeout", .timeLimit(.minutes(1)))
struct APNsRetryTests {
    /// A simulator failing the next `failNext` requests with 500, and a
    /// client on an auto-advancing manual clock; `body` runs, then both stop.
    func withFailingSimulator(
        failNext: Int, _ body: (APNsSimulator, APNsClient, ManualAPNsClock) async throws -> Void
    ) async throws {
        let key = try TestKey()
        let simulator = try await APNsSimulator.start(simulatorConfiguration(key))
        simulator.updateFaults { $0.failNext = failNext }
        let clock = ManualAPNsClock(autoAdvance: true)
        let client = try APNsClient(configuration: clientConfiguration(key, simulator: simulator, clock: clock))
        try await body(simulator, client, clock)
        await client.shutdown()
        try await simulator.stop()
    }

    @Test("5xx for the first 9 attempts (more than the old fixed 6): retried with backoff until accepted")
    func retriesUntilAcceptedWithinTheTTL() async throws {
        try await withFailingSimulator(failNext: 9) { simulator, client, clock async throws in
            let apnsID = UUID().uuidString.lowercased()
            let response = try await client.send(alertRequest(apnsID: apnsID, deadline: clock.now().addingTimeInterval(3600)))
            #expect(response.status == 200)
            #expect(simulator.statusCounts[500] == 9)
            #expect(simulator.deliveries(apnsID: apnsID) == 1)
            let pauses = clock.sleeps
            #expect(pauses.count == 9)
            // Full jitter: pause n is uniform in 0...min(1 s × 2^(n-1), 60 s).
            for (index, pause) in pauses.enumerated() {
                #expect(pause >= .zero && pause <= .seconds(min(1 << index, 60)))
            }
        }
    }

    @Test("Retries stop when the deadline (TTL) runs out")
    func givesUpAtTheDeadline() async throws {
        try await withFailingSimulator(failNext: 1_000_000) { simulator, client, clock async throws in
            let start = clock.now()
            await #expect(throws: APNsError.deadlineExceeded) {
                try await client.send(alertRequest(deadline: start.addingTimeInterval(120)))
            }
            #expect((simulator.statusCounts[500] ?? 0) > 1)
            #expect(clock.now().timeIntervalSince(start) <= 120)
        }
    }

    @Test("TTL 0 (single attempt): a 500 is returned, not retried")
    func singleAttempt() async throws {
        try await withFailingSimulator(failNext: 3) { simulator, client, clock async throws in
            var request = alertRequest(deadline: clock.now().addingTimeInterval(10))
            request.singleAttempt = true
            #expect(try await client.send(request).status == 500)
            #expect(simulator.statusCounts[500] == 1)
            #expect(clock.sleeps.isEmpty)
        }
    }

    @Test("A hung endpoint: no answer within the response timeout resets the stream, and the request is retried")
    func responseTimeoutRetries() async throws {
        let key = try TestKey()
        let simulator = try await APNsSimulator.start(simulatorConfiguration(key))
        simulator.updateFaults { $0.hang = [deviceToken] }
        let clock = ManualAPNsClock(autoAdvance: false)
        var configuration = clientConfiguration(key, simulator: simulator, clock: clock)
        configuration.responseTimeout = .seconds(30)
        let client = try APNsClient(configuration: configuration)
        let apnsID = UUID().uuidString.lowercased()
        let events = simulator.events()
        let pending = Task {
            try await client.send(alertRequest(apnsID: apnsID, deadline: clock.now().addingTimeInterval(3600)))
        }
        for await event in events {  // the request reached the simulator, which holds it
            if case .requestHeld = event { break }
        }
        await clock.waitForTimers(1)  // its response timer runs
        clock.advance(by: .seconds(29))
        #expect(simulator.deliveredCount == 0)
        clock.advance(by: .seconds(1))  // the timeout: stream reset, retry pause
        let pause = await clock.nextSleep()
        #expect(pause <= .seconds(1))
        simulator.updateFaults { $0.hang = [] }  // the endpoint recovers
        clock.advance(by: pause)
        let response = try await pending.value
        #expect(response.status == 200)
        #expect(simulator.deliveries(apnsID: apnsID) == 1)
        await client.shutdown()
        try await simulator.stop()
    }
}
