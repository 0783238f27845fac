import Synchronization

/// Whether the instance takes work: Health answers SERVING only in `.serving`,
/// and Status reports it.
public enum ServingState: Int, Sendable {
    case starting
    case serving
    case draining
}

/// What Health and `/readyz` answer from: the serving state and whether the
/// store can be written.
public struct Readiness: Sendable, Hashable {
    public var state: ServingState
    public var storeWritable: Bool

    /// SERVING / 200: serving, with a writable store.
    public var isReady: Bool { state == .serving && storeWritable }
}

/// The instance's serving state and store writability, shared by the
/// health, status, admin and shutdown paths across event-loop threads, with
/// change notifications for `Health/Watch`.
public final class ServingStateCell: Sendable {
    /// Read without a lock: Health/Check is the load balancers' hot path.
    /// The state's raw value, plus `storeFailing` when the store is not writable.
    private let raw: Atomic<Int>
    private static let storeFailing = 8
    /// One continuation per watcher. Each has a one-element newest-wins
    /// buffer, so a watcher that reads slowly costs one value, never a queue.
    private let watchers = Mutex(Watchers())

    private struct Watchers {
        var nextID = 0
        var continuations: [Int: AsyncStream<Readiness>.Continuation] = [:]
    }

    public init(_ initial: ServingState = .starting) {
        raw = Atomic(initial.rawValue)
    }

    public var current: ServingState {
        ServingState(rawValue: raw.load(ordering: .acquiring) & ~Self.storeFailing) ?? .starting
    }

    /// Serving with a writable store: one atomic load.
    public var isReady: Bool { raw.load(ordering: .acquiring) == ServingState.serving.rawValue }

    public var readiness: Readiness { Self.readiness(raw.load(ordering: .acquiring)) }

    private static func readiness(_ raw: Int) -> Readiness {
        Readiness(state: ServingState(rawValue: raw & ~storeFailing) ?? .starting, storeWritable: raw & storeFailing == 0)
    }

    public func set(_ state: ServingState) {
        update { ($0 & storeFailingBit) | state.rawValue }
    }

    /// Records whether the store can be written (the write probe's verdict).
    public func setStoreWritable(_ writable: Bool) {
        update { ($0 & ~storeFailingBit) | (writable ? 0 : storeFailingBit) }
    }

    private var storeFailingBit: Int { Self.storeFailing }

    private func update(_ change: (Int) -> Int) {
        // Store and notify under the watchers' lock, so two concurrent sets
        // cannot reach a watcher in the opposite order of the stores.
        watchers.withLock { watchers in
            let old = raw.load(ordering: .acquiring)
            let new = change(old)
            guard new != old else { return }
            raw.store(new, ordering: .releasing)
            let readiness = Self.readiness(new)
            for continuation in watchers.continuations.values { continuation.yield(readiness) }
        }
    }

    /// The current state at once, then each later one. A reader that falls
    /// behind sees only the latest state (changes coalesce, and may repeat a
    /// value it already saw). The stream ends when the reading task is
    /// cancelled or the stream is dropped.
    public func changes() -> AsyncStream<Readiness> {
        let (stream, continuation) = AsyncStream.makeStream(of: Readiness.self, bufferingPolicy: .bufferingNewest(1))
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
            continuation.yield(readiness)
        }
        return stream
    }

    /// How many `changes()` streams are open (for tests: a cancelled watcher
    /// must not stay registered).
    var watcherCount: Int { watchers.withLock { $0.continuations.count } }
}
