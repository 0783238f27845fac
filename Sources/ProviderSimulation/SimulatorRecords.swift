public import Synchronization

/// What a simulator accepted: a count, the accepted values when kept,
/// answers by HTTP status, streams of what is accepted next, and waiters for
/// a count.
///
/// ``record(_:status:)`` is inlinable, so the simulators that call it per
/// request compile it for their own element type (no generic metadata looked
/// up at run time per value).
@usableFromInline
package final class SimulatorRecords<Element: Sendable>: Sendable {
    @usableFromInline
    struct Book {
        @usableFromInline var kept: [Element] = []
        @usableFromInline var count = 0
        @usableFromInline var statusCounts: [Int: Int] = [:]
        @usableFromInline var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
        var closed = false
    }

    /// Whether accepted values are kept (off for long runs: only counted).
    @usableFromInline package let keep: Bool
    @usableFromInline let book = Mutex(Book())
    @usableFromInline let subscribers = SimulatorBroadcast<Element>()

    package init(keep: Bool) {
        self.keep = keep
    }

    /// Records one accepted value, counting `status` (if given) in the same
    /// step; subscribers see it, then waiters whose count it reached resume.
    @inlinable
    package func record(_ element: Element, status: Int? = nil) {
        let ready = book.withLock { book -> [CheckedContinuation<Void, Never>] in
            book.count += 1
            if let status { book.statusCounts[status, default: 0] += 1 }
            if keep { book.kept.append(element) }
            guard !book.waiters.isEmpty else { return [] }
            var ready: [CheckedContinuation<Void, Never>] = []
            let count = book.count
            book.waiters.removeAll { waiter in
                guard waiter.count <= count else { return false }
                ready.append(waiter.continuation)
                return true
            }
            return ready
        }
        subscribers.yield(element)
        for continuation in ready { continuation.resume() }
    }

    /// Counts one answer with `status`.
    package func countStatus(_ status: Int) {
        book.withLock { $0.statusCounts[status, default: 0] += 1 }
    }

    /// Accepted so far.
    package var count: Int { book.withLock { $0.count } }
    /// Every kept value, in acceptance order.
    package var kept: [Element] { book.withLock { $0.kept } }
    /// Answers by status.
    package var statusCounts: [Int: Int] { book.withLock { $0.statusCounts } }

    /// Values accepted from now on.
    package func subscribe() -> AsyncStream<Element> { subscribers.subscribe() }

    /// Returns once at least `count` values were accepted (or at ``close()``).
    package func waitFor(count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = book.withLock { book in
                if book.count >= count || book.closed { return true }
                book.waiters.append((count, continuation))
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Ends every stream (and those subscribed later); waiters keep waiting.
    package func finishStreams() { subscribers.finish() }

    /// Shutdown: ends every stream and wakes every waiter, now and later.
    package func close() {
        let waiting = book.withLock { book in
            book.closed = true
            defer { book.waiters = [] }
            return book.waiters.map(\.continuation)
        }
        subscribers.finish()
        for continuation in waiting { continuation.resume() }
    }

    /// Forgets the count, the kept values and the status counts.
    package func reset() {
        book.withLock { book in
            book.kept = []
            book.count = 0
            book.statusCounts = [:]
        }
    }
}
