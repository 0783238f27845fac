public import HeraldService
import Synchronization

/// A scheduler clock the test moves by hand; sleepers wake when it passes
/// their time (never by themselves, however long the test takes).
public final class ManualClock: HeraldClock {
    private struct State {
        var now: Int64
        var sleepers: [(until: Int64, continuation: CheckedContinuation<Void, any Error>)] = []
    }

    private let state: Mutex<State>

    public init(now: Int64) { state = Mutex(State(now: now)) }

    public func now() -> Int64 { state.withLock { $0.now } }

    public func sleep(until milliseconds: Int64) async throws {
        try await withCheckedThrowingContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                if milliseconds <= state.now { return true }
                state.sleepers.append((milliseconds, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    public func advance(to milliseconds: Int64) {
        let due = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.now = milliseconds
            let due = state.sleepers.filter { $0.until <= milliseconds }.map(\.continuation)
            state.sleepers.removeAll { $0.until <= milliseconds }
            return due
        }
        for continuation in due { continuation.resume() }
    }
}
