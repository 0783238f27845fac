import Synchronization

/// Whether the instance takes work: Health answers SERVING only in `.serving`,
/// and Status reports it.
public enum ServingState: Int, Sendable {
    case starting
    case serving
    case draining
}

/// The instance's serving state, shared by the health, status and shutdown
/// paths across event-loop threads, with change notifications for
/// `Health/Watch`.
public final class ServingStateCell: Sendable {
    /// Read without a lock: Health/Check is the load balancers' hot path.
    private let raw: Atomic<Int>
    /// One continuation per watcher. Each has a one-element newest-wins
    /// buffer, so a watcher that reads slowly costs one value, never a queue.
    private let watchers = Mutex(Watchers())

    private struct Watchers {
        var nextID = 0
        var continuations: [Int: AsyncStream<ServingState>.Continuation] = [:]
    }

    public init(_ initial: ServingState = .starting) {
        raw = Atomic(initial.rawValue)
    }

    public var current: ServingState {
        ServingState(rawValue: raw.load(ordering: .acquiring)) ?? .starting
    }

    public func set(_ state: ServingState) {
        // Store and notify under the watchers' lock, so two concurrent sets
        // cannot reach a watcher in the opposite order of the stores.
        watchers.withLock { watchers in
            raw.store(state.rawValue, ordering: .releasing)
            for continuation in watchers.continuations.values { continuation.yield(state) }
        }
    }

    /// The current state at once, then each later one. A reader that falls
    /// behind sees only the latest state (changes coalesce, and may repeat a
    /// value it already saw). The stream ends when the reading task is
    /// cancelled or the stream is dropped.
    public func changes() -> AsyncStream<ServingState> {
        let (stream, continuation) = AsyncStream.makeStream(of: ServingState.self, bufferingPolicy: .bufferingNewest(1))
        let id = watchers.withLock { watchers in
            defer { watchers.nextID += 1 }
            return watchers.nextID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.watchers.withLock { $0.continuations.removeValue(forKey: id) }
        }
        watchers.withLock { watchers in
            // Subscribing and reading the current state under one lock: no set
            // can fall between the two and be missed.
            watchers.continuations[id] = continuation
            continuation.yield(current)
        }
        return stream
    }

    /// How many `changes()` streams are open (for tests: a cancelled watcher
    /// must not stay registered).
    var watcherCount: Int { watchers.withLock { $0.continuations.count } }
}
