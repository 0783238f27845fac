public import HeraldService
import Synchronization

/// A scheduler clock the test moves by hand; sleepers wake when it passes
/// their time (never by themselves, however long the test takes), or throw
/// `CancellationError` when their task is cancelled.
public final class ManualClock: HeraldClock {
    private struct Sleeper {
        var id: Int
        var until: Int64
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Int64
        var nextID = 0
        var sleepers: [Sleeper] = []
        var started = 0
    }

    private let state: Mutex<State>

    public init(now: Int64) { state = Mutex(State(now: now)) }

    public func now() -> Int64 { state.withLock { $0.now } }

    /// Sleepers not yet woken.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// Sleeps that waited (were not due at once) since the start.
    public var sleepsStarted: Int { state.withLock { $0.started } }

    public func sleep(until milliseconds: Int64) async throws {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                enum Now { case ready, cancelled, wait }
                let now = state.withLock { state -> Now in
                    if milliseconds <= state.now { return .ready }
                    if Task.isCancelled { return .cancelled }
                    state.sleepers.append(Sleeper(id: id, until: milliseconds, continuation: continuation))
                    state.started += 1
                    return .wait
                }
                switch now {
                case .ready: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .wait: break
                }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
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
