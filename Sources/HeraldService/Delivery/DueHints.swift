/// The due times a polling replica scheduled itself (PostgreSQL): its poll
/// wakes at the next of them instead of at the next poll tick, so a message
/// is claimed when it falls due rather than up to `pollMilliseconds` later.
/// What another replica scheduled is still found by the poll.
///
/// Bounded: at most `capacity` distinct times, rounded up to `granularity`
/// milliseconds (many messages due together share one entry); past that,
/// the latest times are dropped (the poll finds those messages anyway).
struct DueHints {
    private(set) var times: [Int64] = []
    let capacity: Int
    let granularity: Int64

    init(capacity: Int = 1024, granularity: Int64 = 5) {
        precondition(capacity > 0 && granularity > 0)
        self.capacity = capacity
        self.granularity = granularity
    }

    /// The earliest time noted, if any.
    var next: Int64? { times.first }

    /// Notes `dueAt` (rounded up, so a wake-up is never early).
    mutating func note(_ dueAt: Int64) {
        let time = Self.roundUp(dueAt, granularity)
        var low = 0, high = times.count
        while low < high {
            let middle = (low + high) / 2
            if times[middle] < time { low = middle + 1 } else { high = middle }
        }
        if low < times.count && times[low] == time { return }
        if times.count == capacity {
            guard low < times.count else { return }
            times.removeLast()
        }
        times.insert(time, at: low)
    }

    /// Forgets every time at or before `now` (a poll at `now` covers them).
    mutating func covered(by now: Int64) {
        times.removeFirst(times.firstIndex { $0 > now } ?? times.count)
    }

    /// `value` rounded up to a multiple of `step`, saturating at `Int64.max`.
    static func roundUp(_ value: Int64, _ step: Int64) -> Int64 {
        let remainder = value % step
        guard remainder != 0 else { return value }
        let up = value >= 0 ? step - remainder : -remainder
        let (sum, overflow) = value.addingReportingOverflow(up)
        return overflow ? .max : sum
    }
}
