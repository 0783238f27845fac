@testable import FCM
import HeraldPrimitives
import HeraldTestSupport
import NIOPosix
import Synchronization
import Testing

/// A token endpoint in memory: counts fetches, answers with `t1`, `t2`…, and
/// can hold answers until the test opens the gate.
final class FakeTokenSource: Sendable {
    private struct State {
        var calls = 0
        var lifetime: Int64
        var failNext: FCMTokenFailure?
        var gateClosed = false
        var held: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>
    let fetched: AsyncStream<Int>
    private let fetchedContinuation: AsyncStream<Int>.Continuation

    init(lifetime: Int64) {
        state = Mutex(State(lifetime: lifetime))
        (fetched, fetchedContinuation) = AsyncStream.makeStream(of: Int.self)
    }

    var calls: Int { state.withLock { $0.calls } }

    func closeGate() { state.withLock { $0.gateClosed = true } }

    func openGate() {
        let held = state.withLock { state in
            state.gateClosed = false
            defer { state.held.removeAll() }
            return state.held
        }
        for continuation in held { continuation.resume() }
    }

    func failNext(_ failure: FCMTokenFailure) { state.withLock { $0.failNext = failure } }

    func fetch() async -> Result<(token: String, expiresIn: Int64), FCMTokenFailure> {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let wait = state.withLock { state in
                if state.gateClosed { state.held.append(continuation) }
                return state.gateClosed
            }
            if !wait { continuation.resume() }
        }
        let (call, lifetime, failure) = state.withLock { state in
            state.calls += 1
            defer { state.failNext = nil }
            return (state.calls, state.lifetime, state.failNext)
        }
        fetchedContinuation.yield(call)
        if let failure { return .failure(failure) }
        return .success(("t\(call)", lifetime))
    }
}

extension FCMTestSuites {
    @Suite struct FCMAccessTokenTests {
        func make(lifetime: Int64, clock: ManualFCMClock) -> (FCMAccessTokens, FakeTokenSource) {
            let source = FakeTokenSource(lifetime: lifetime)
            let tokens = FCMAccessTokens(
                clock: clock, refreshMargin: .seconds(300), timerLoop: MultiThreadedEventLoopGroup.singleton.next()
            ) { await source.fetch() }
            return (tokens, source)
        }

        @Test func concurrentCallersShareOneFetch() async throws {
            let clock = ManualFCMClock(start: Timestamp(seconds: 1_000))
            let (tokens, source) = make(lifetime: 3600, clock: clock)
            source.closeGate()
            let values = await withTaskGroup(of: String?.self) { group in
                for _ in 0..<50 { group.addTask { try? await tokens.token() } }
                // Whoever arrives while the fetch is held at the gate waits for it; later callers find it cached.
                source.openGate()
                var values: [String?] = []
                for await value in group { values.append(value) }
                return values
            }
            #expect(values.count == 50)
            #expect(Set(values) == ["t1"])
            #expect(source.calls == 1)
            #expect(tokens.minted.load(ordering: .relaxed) == 1)
            await tokens.shutdown()
        }

        @Test func refreshesInTheBackgroundFiveMinutesBeforeExpiry() async throws {
            let clock = ManualFCMClock(start: Timestamp(seconds: 1_000))
            let (tokens, source) = make(lifetime: 3600, clock: clock)
            var fetched = source.fetched.makeAsyncIterator()
            #expect(try await tokens.token() == "t1")
            #expect(await fetched.next() == 1)
            await clock.waitForTimers(1)
            clock.advance(by: .seconds(3299))
            #expect(try await tokens.token() == "t1")
            #expect(source.calls == 1)
            clock.advance(by: .seconds(1))  // 3300 s: the refresh timer fires, nobody asked
            #expect(await fetched.next() == 2)
            await clock.waitForTimers(1)  // the next refresh is armed once t2 is stored
            #expect(try await tokens.token() == "t2")
            #expect(source.calls == 2)
            await tokens.shutdown()
        }

        @Test func aShortLifetimeRefreshesAtHalfLife() async throws {
            let clock = ManualFCMClock(start: Timestamp(seconds: 1_000))
            let (tokens, source) = make(lifetime: 120, clock: clock)
            var fetched = source.fetched.makeAsyncIterator()
            #expect(try await tokens.token() == "t1")
            _ = await fetched.next()
            await clock.waitForTimers(1)
            clock.advance(by: .seconds(59))
            #expect(source.calls == 1)
            clock.advance(by: .seconds(1))
            #expect(await fetched.next() == 2)
            await clock.waitForTimers(1)
            #expect(try await tokens.token() == "t2")
            await tokens.shutdown()
        }

        @Test func anExpiredTokenIsNeverHandedOut() async throws {
            let clock = ManualFCMClock(start: Timestamp(seconds: 1_000))
            let (tokens, source) = make(lifetime: 3600, clock: clock)
            #expect(try await tokens.token() == "t1")
            // The background refresh fails; the cached token stays in use until it expires.
            source.failNext(FCMTokenFailure(description: "HTTP 503 without an OAuth error body", retryable: true))
            await clock.waitForTimers(1)
            var fetched = source.fetched.makeAsyncIterator()
            _ = await fetched.next()
            clock.advance(by: .seconds(3300))
            #expect(await fetched.next() == 2)
            #expect(try await tokens.token() == "t1")
            #expect(tokens.lastError.withLock { $0 } == "HTTP 503 without an OAuth error body")
            clock.advance(by: .seconds(300))  // past expiry (less the safety margin): the caller waits for a fetch
            let value = try await tokens.token()
            #expect(value == "t3" || value == "t4")  // the quiet-period retry timer may have fetched t3 first
            await tokens.shutdown()
        }

        /// A caller waiting until 1,005 s (clock at 1,000 s) for a fetch held at the gate, its deadline timer armed.
        func waitForHeldFetch() async -> (ManualFCMClock, FCMAccessTokens, FakeTokenSource, Task<String?, any Error>) {
            let clock = ManualFCMClock(start: Timestamp(seconds: 1_000))
            let (tokens, source) = make(lifetime: 3600, clock: clock)
            source.closeGate()
            let waiting = Task { try await tokens.token(waitingUntil: Timestamp(seconds: 1_005)) }
            await clock.waitForTimers(1)
            return (clock, tokens, source, waiting)
        }

        @Test func aWaitEndsAtTheCallersDeadlineWhileTheFetchGoesOn() async throws {
            let (clock, tokens, source, waiting) = await waitForHeldFetch()
            clock.advance(by: .seconds(5))
            #expect(try await waiting.value == nil)
            #expect(source.calls == 0)  // the fetch is still held
            // A later caller without a deadline gets that same fetch's token.
            let later = Task { try await tokens.token() }
            source.openGate()
            #expect(try await later.value == "t1")
            #expect(source.calls == 1)
            await tokens.shutdown()
        }

        @Test func aFetchBeforeTheDeadlineCancelsItsTimer() async throws {
            let (clock, tokens, source, waiting) = await waitForHeldFetch()
            source.openGate()
            #expect(try await waiting.value == "t1")
            await clock.waitForTimers(1)  // the refresh timer, armed once t1 is stored
            #expect(clock.pendingTimers == 1)  // the deadline's timer is gone
            #expect(try await tokens.token(waitingUntil: Timestamp(seconds: 999)) == "t1")  // cached: no wait at all
            await tokens.shutdown()
        }

        @Test func invalidateDropsOnlyTheRefusedToken() async throws {
            let clock = ManualFCMClock(start: Timestamp(seconds: 1_000))
            let (tokens, source) = make(lifetime: 3600, clock: clock)
            #expect(try await tokens.token() == "t1")
            await tokens.invalidate("t0")  // an older token: nothing happens
            #expect(try await tokens.token() == "t1")
            await tokens.invalidate("t1")
            #expect(try await tokens.token() == "t2")
            source.failNext(FCMTokenFailure(description: "HTTP 400 invalid_grant: bad", retryable: false))
            await tokens.invalidate("t2")
            await #expect(throws: FCMTokenFailure.self) { try await tokens.token() }
            #expect(try await tokens.token() == "t4")
            await tokens.shutdown()
        }
    }
}
