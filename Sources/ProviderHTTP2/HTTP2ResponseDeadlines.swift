import HeraldPrimitives
import NIOCore

/// When each stream of one connection must have its answer, kept in the
/// order the streams started: every stream waits the same response timeout,
/// so the oldest open stream is always due first and one timer per
/// connection (armed for the front) replaces a timer per stream — arming and
/// cancelling an event-loop timer per request was ~15 % of the APNs client's
/// instructions per notification (callgrind, bench/apns-ir.sh).
///
/// Entries of streams that closed are dropped lazily: when they reach the
/// front, or all at once when they outnumber the open streams (so the
/// queue stays within twice the open streams plus a constant however
/// unevenly answers come). A wall clock that steps back delays a timeout by
/// at most one more timeout (``nextCheck(now:)`` never waits longer).
struct HTTP2ResponseDeadlines {
    /// How long a stream may wait for its answer.
    let timeout: Duration
    private let timeoutSeconds: Double
    private var order = CircularBuffer<(streamID: Int32, due: Timestamp)>()

    init(timeout: Duration) {
        self.timeout = timeout
        timeoutSeconds = timeout.timeInterval
    }

    /// Entries held (open streams and closed ones not dropped yet).
    var count: Int { order.count }

    /// Stream `streamID` started at `now`: due one timeout later.
    mutating func started(_ streamID: Int32, at now: Timestamp) {
        order.append((streamID, now.addingTimeInterval(timeoutSeconds)))
    }

    /// Drops closed streams' entries once they outnumber the open ones
    /// (`open` streams now; `isOpen` says whether one still is).
    mutating func compact(open: Int, isOpen: (Int32) -> Bool) {
        guard order.count > 2 * open + 64 else { return }
        order.removeAll { !isOpen($0.streamID) }
    }

    /// Removes and returns the open streams due at `now` (oldest first),
    /// dropping closed streams' entries met on the way.
    mutating func expired(now: Timestamp, isOpen: (Int32) -> Bool) -> [Int32] {
        var due: [Int32] = []
        while let first = order.first {
            if !isOpen(first.streamID) {
                order.removeFirst()
            } else if first.due <= now {
                order.removeFirst()
                due.append(first.streamID)
            } else {
                break
            }
        }
        return due
    }

    /// How long from `now` until the front entry is due (nil when none);
    /// never more than one timeout.
    func nextCheck(now: Timestamp) -> Duration? {
        guard let first = order.first else { return nil }
        let remaining = min(max(first.due.timeIntervalSince(now), 0), timeoutSeconds)
        return .nanoseconds(Int64(remaining * 1e9))
    }

    /// Forgets every entry (the connection closed).
    mutating func removeAll() {
        order.removeAll()
    }
}
