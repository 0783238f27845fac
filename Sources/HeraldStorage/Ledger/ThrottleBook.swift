import Synchronization

/// The throttle's schedule held in memory, for a store that one process
/// owns (SQLite, behind `DataDirectoryLock`): each bundle's next free slot,
/// booked under a lock with `ThrottleSchedule`. Not durable, by design: a
/// restart forgets at most one horizon of booked slots, so the first second
/// after a restart may carry up to one extra second's sends.
final class ThrottleBook: Sendable {
    private let nextFree = Mutex<[String: Int64]>([:])

    func take(bundleID: String, ratePerSecond: Int, count: Int, now: Int64) -> ThrottleGrant {
        let nowMicros = ThrottleSchedule.micros(now)
        return nextFree.withLock { table in
            let (grant, next) = ThrottleSchedule.grant(
                nextFree: table[bundleID], nowMicros: nowMicros, ratePerSecond: ratePerSecond, count: count)
            if grant.count > 0 { table[bundleID] = next }
            return grant
        }
    }

    func giveBack(bundleID: String, grant: ThrottleGrant, unused: Int) -> Bool {
        let unused = min(unused, grant.count)
        guard unused > 0 else { return false }
        return nextFree.withLock { table in
            guard table[bundleID] == grant.endMicros else { return false }
            table[bundleID] = grant.endMicros - Int64(unused) * grant.spacingMicros
            return true
        }
    }
}
