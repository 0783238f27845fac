import FCM
import FCMSimulation
import HeraldPrimitives
import HeraldTestSupport
import Synchronization
import Testing

/// A ``FCMRequest/willHandOver`` hook for tests: counts its calls, notes
/// what the simulator had accepted and how many access tokens it had minted
/// at each call, and answers `done` with `failure` (nil: recorded) at once,
/// or holds it until ``release()`` when `holding`.
final class HandOverProbe: Sendable {
    struct Call: Sendable {
        var acceptedBefore: Int
        var tokensMintedBefore: Int
    }

    private struct State {
        var calls: [Call] = []
        var held: [@Sendable ((any Error)?) -> Void] = []
    }

    private let state = Mutex(State())
    private let simulator: FCMSimulator
    private let failure: (any Error & Sendable)?
    private let holding: Bool
    let called: AsyncStream<Void>
    private let calledContinuation: AsyncStream<Void>.Continuation

    init(simulator: FCMSimulator, failure: (any Error & Sendable)? = nil, holding: Bool = false) {
        self.simulator = simulator
        self.failure = failure
        self.holding = holding
        (called, calledContinuation) = AsyncStream.makeStream()
    }

    var calls: [Call] { state.withLock { $0.calls } }

    var hook: FCMHandOverHook {
        { [self] done in
            let call = Call(acceptedBefore: simulator.acceptedCount, tokensMintedBefore: simulator.accessTokensMinted)
            state.withLock { state in
                state.calls.append(call)
                if holding { state.held.append(done) }
            }
            calledContinuation.yield()
            if !holding { done(failure) }
        }
    }

    /// Answers the held calls (recorded).
    func release() {
        let held = state.withLock { state in
            defer { state.held.removeAll() }
            return state.held
        }
        for done in held { done(nil) }
    }
}

struct StoreDown: Error, CustomStringConvertible {
    var description: String { "store down" }
}

extension FCMTestSuites {
    /// The hand-over hook fires when a request is about to leave on a
    /// stream, after the access token, the rate bucket and the connection,
    /// and never when the request fails before that.
    @Suite(.timeLimit(.minutes(1))) struct FCMHandOverTests {
        @Test func theHookFiresOnceAfterTheTokenAndBeforeTheBytes() async throws {
            let loopback = try await Loopback.start()
            let probe = HandOverProbe(simulator: loopback.simulator)
            var request = loopback.request()
            request.willHandOver = probe.hook
            let response = try await loopback.client.send(request)
            #expect(response.isSuccess)
            #expect(probe.calls.count == 1)
            #expect(probe.calls.first?.acceptedBefore == 0)
            #expect(probe.calls.first?.tokensMintedBefore == 1)
            #expect(loopback.simulator.acceptedCount == 1)
            await loopback.stop()
        }

        @Test func aHeldHookHoldsTheRequest() async throws {
            let loopback = try await Loopback.start()
            let probe = HandOverProbe(simulator: loopback.simulator, holding: true)
            var request = loopback.request()
            request.willHandOver = probe.hook
            let sending = Task { try await loopback.client.send(request) }
            for await _ in probe.called { break }
            // A request without a hook passes it on the same connection; the held one waits.
            #expect(try await loopback.client.send(loopback.request(token: "device-token-2")).isSuccess)
            #expect(loopback.simulator.accepted().map(\.token) == ["device-token-2"])
            probe.release()
            #expect(try await sending.value.isSuccess)
            #expect(loopback.simulator.accepted().map(\.token) == ["device-token-2", "device-token-1"])
            #expect(probe.calls.count == 1)
            await loopback.stop()
        }

        @Test func aHookErrorSendsNothing() async throws {
            let loopback = try await Loopback.start()
            let probe = HandOverProbe(simulator: loopback.simulator, failure: StoreDown())
            var request = loopback.request()
            request.willHandOver = probe.hook
            await #expect(throws: FCMError.handOverNotRecorded("store down")) {
                _ = try await loopback.client.send(request)
            }
            #expect(probe.calls.count == 1)
            #expect(loopback.simulator.acceptedCount == 0)
            #expect(loopback.simulator.statusCounts == [200: 1])  // the token endpoint's answer, nothing else
            // The stream it held is free again.
            #expect(try await loopback.client.send(loopback.request()).isSuccess)
            await loopback.stop()
        }

        @Test func noHookWhenTheTokenFetchFails() async throws {
            let loopback = try await Loopback.start()
            loopback.simulator.inject(.invalidGrant)
            let probe = HandOverProbe(simulator: loopback.simulator)
            var request = loopback.request()
            request.willHandOver = probe.hook
            do {
                _ = try await loopback.client.send(request)
                Issue.record("sent without a token")
            } catch let error as FCMError {
                guard case .tokenEndpoint = error else { Issue.record("\(error)"); return }
            }
            #expect(probe.calls.isEmpty)
            await loopback.stop()
        }

        @Test func noHookWhenTheRateBucketRefuses() async throws {
            let clock = ManualFCMClock(start: .now)
            // 60 a minute, bursts of one: the second send would wait a second.
            let loopback = try await Loopback.start(clock: clock) { $0.ratePerMinute = 60 }
            #expect(try await loopback.client.send(loopback.request()).isSuccess)
            let probe = HandOverProbe(simulator: loopback.simulator)
            var request = loopback.request(deadline: clock.now().addingTimeInterval(0.5))
            request.willHandOver = probe.hook
            await #expect(throws: FCMError.deadlineExceeded) {
                _ = try await loopback.client.send(request)
            }
            #expect(probe.calls.isEmpty)
            #expect(clock.sleeps.isEmpty)
            #expect(loopback.simulator.acceptedCount == 1)
            await loopback.stop()
        }

        @Test func noHookWhenNoConnectionComesUp() async throws {
            // The token endpoint answers; the messages endpoint refuses connections (nothing listens on port 1).
            let loopback = try await Loopback.start { $0.endpoint = FCMEndpoint(host: "127.0.0.1", port: 1) }
            let probe = HandOverProbe(simulator: loopback.simulator)
            var request = loopback.request(singleAttempt: true)
            request.willHandOver = probe.hook
            do {
                _ = try await loopback.client.send(request)
                Issue.record("sent without a connection")
            } catch let error as FCMError {
                guard case .connectionFailed = error else { Issue.record("\(error)"); return }
            }
            #expect(loopback.simulator.accessTokensMinted == 1)
            #expect(probe.calls.isEmpty)
            await loopback.stop()
        }

        @Test func everyAttemptIsMarkedBeforeItLeaves() async throws {
            let clock = ManualFCMClock(start: .now, autoAdvance: true)
            let loopback = try await Loopback.start(clock: clock)
            loopback.simulator.inject(.internalError)
            let probe = HandOverProbe(simulator: loopback.simulator)
            var request = loopback.request()
            request.willHandOver = probe.hook
            let response = try await loopback.client.send(request)
            #expect(response.isSuccess)
            #expect(response.attempts == 2)
            #expect(probe.calls.count == 2)
            #expect(loopback.simulator.statusCounts[500] == 1)
            await loopback.stop()
        }
    }
}
