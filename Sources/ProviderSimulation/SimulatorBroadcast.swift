public import Synchronization

/// Hands each value to every subscriber's `AsyncStream`; a subscriber that
/// stops consuming is dropped. After ``finish()`` new subscribers get a
/// stream that has already ended.
///
/// ``yield(_:)`` is inlinable, so the simulators that call it per request
/// compile it for their own element type (no generic metadata looked up at
/// run time per value).
@usableFromInline
package final class SimulatorBroadcast<Element: Sendable>: Sendable {
    @usableFromInline
    struct Subscribers {
        @usableFromInline var continuations: [Int: AsyncStream<Element>.Continuation] = [:]
        var next = 0
        var finished = false
    }

    @usableFromInline let subscribers = Mutex(Subscribers())

    package init() {}

    /// A stream of the values yielded from now on.
    package func subscribe() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream<Element>.makeStream()
        let id = subscribers.withLock { subscribers -> Int? in
            guard !subscribers.finished else { return nil }
            subscribers.next += 1
            subscribers.continuations[subscribers.next] = continuation
            return subscribers.next
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [self] _ in
            _ = subscribers.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Subscribers now.
    package var count: Int { subscribers.withLock { $0.continuations.count } }

    @inlinable
    package func yield(_ value: Element) {
        let continuations = subscribers.withLock { Array($0.continuations.values) }
        for continuation in continuations { continuation.yield(value) }
    }

    /// Ends every stream, and those subscribed later.
    package func finish() {
        let continuations = subscribers.withLock { subscribers in
            subscribers.finished = true
            defer { subscribers.continuations = [:] }
            return Array(subscribers.continuations.values)
        }
        for continuation in continuations { continuation.finish() }
    }
}
