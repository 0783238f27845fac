import HeraldPrimitives
import Synchronization

/// A token bucket: `ratePerMinute` messages a minute, bursts of one second's
/// worth. Pure state, time passed in. `reserve` always takes a token (the
/// level may go negative: a queue of reservations) and says how long the
/// caller must wait for it; `release` gives back one not used.
struct FCMRateBucket: Sendable, Equatable {
    let capacity: Double
    let perSecond: Double
    private(set) var level: Double
    private var last: Timestamp

    init(ratePerMinute: Int, now: Timestamp) {
        let rate = Double(max(ratePerMinute, 1))
        perSecond = rate / 60
        capacity = max(1, (rate / 60).rounded(.down))
        level = capacity
        last = now
    }

    /// Takes one token; returns the wait before it may be used (zero: now).
    mutating func reserve(now: Timestamp) -> Duration {
        refill(now: now)
        level -= 1
        return level >= 0 ? .zero : .seconds(interval: -level / perSecond)
    }

    /// Returns a reserved token that will not be used (the wait outlasted the deadline).
    mutating func release(now: Timestamp) {
        refill(now: now)
        level = min(level + 1, capacity)
    }

    private mutating func refill(now: Timestamp) {
        let elapsed = now.timeIntervalSince(last)
        if elapsed > 0 {
            level = min(capacity, level + elapsed * perSecond)
            last = now
        }
    }
}

/// One bucket per project, shared by the client's senders.
final class FCMRateLimiter: Sendable {
    private let ratePerMinute: Int
    private let buckets = Mutex<[String: FCMRateBucket]>([:])

    init(ratePerMinute: Int) { self.ratePerMinute = ratePerMinute }

    /// Waits for a token of `project`'s bucket on `clock`; throws
    /// ``FCMError/deadlineExceeded`` (without waiting) when it would come after `deadline`.
    func acquire(project: String, clock: any FCMClock, deadline: Timestamp?) async throws {
        let now = clock.now()
        let wait = buckets.withLock { buckets in
            var bucket = buckets[project] ?? FCMRateBucket(ratePerMinute: ratePerMinute, now: now)
            let wait = bucket.reserve(now: now)
            if wait > .zero, let deadline, now.addingTimeInterval(wait.timeInterval) >= deadline {
                bucket.release(now: now)
                buckets[project] = bucket
                return Duration?.none
            }
            buckets[project] = bucket
            return wait
        }
        guard let wait else { throw FCMError.deadlineExceeded }
        if wait > .zero { try await clock.sleep(for: wait) }
    }
}
