/// The throttle's virtual schedule (GCRA): each bundle keeps the instant of
/// its next free send slot; a grant books slots from max(that instant, now),
/// one every `spacing`, and moves it past the last booked slot. Shared by
/// every store (PostgreSQL repeats it in SQL: `PostgresStore+Ledger.swift`)
/// so that they book alike. Microseconds: a rate that does not divide a
/// second (300/s) keeps its spacing (3,334 µs) within 0.02 %.
public enum ThrottleSchedule {
    /// How far ahead of `now` one call may book: one second of slots at
    /// most, so a caller never waits longer for its slots, and what a
    /// replica that dies with slots booked wastes is at most this much.
    public static let horizonMicros: Int64 = 1_000_000

    /// A next free slot further ahead than this was not booked by a caller
    /// whose clock agrees with ours (honest calls book within `horizon` of
    /// their own `now`): it is ignored, the schedule restarting at `now`,
    /// so that one call with a far-future `now` cannot stop a bundle.
    public static let maximumLeadMicros: Int64 = 10_000_000

    /// Microseconds between two slots at `ratePerSecond` (rounded up: never
    /// faster than the rate; a rate below 1 is taken as 1, one above a
    /// million as a million).
    public static func spacing(ratePerSecond: Int) -> Int64 {
        let rate = Int64(min(max(ratePerSecond, 1), 1_000_000))
        return (1_000_000 + rate - 1) / rate
    }

    /// The grant for `count` slots when the bundle's next free slot is
    /// `nextFree` (nil: never booked), and that slot's new value.
    public static func grant(
        nextFree: Int64?, nowMicros: Int64, ratePerSecond: Int, count: Int
    ) -> (grant: ThrottleGrant, nextFree: Int64) {
        let spacing = spacing(ratePerSecond: ratePerSecond)
        var start = nowMicros
        if let nextFree, nextFree >= nowMicros, nextFree - nowMicros <= maximumLeadMicros {
            start = nextFree
        }
        let room = nowMicros + horizonMicros - start
        let available = room > 0 ? (room + spacing - 1) / spacing : 0
        let granted = Int(min(Int64(max(count, 0)), available))
        let grant = ThrottleGrant(startMicros: start, spacingMicros: spacing, count: granted)
        return (grant, granted > 0 ? grant.endMicros : (nextFree ?? start))
    }

    /// Milliseconds to microseconds (the callers' clock to the schedule's),
    /// held within ±`Int64.max / 4` microseconds (about 73,000 years from
    /// the epoch): a hostile `now` cannot overflow the slot arithmetic.
    public static func micros(_ milliseconds: Int64) -> Int64 {
        let bound = Int64.max / 4_000
        return min(max(milliseconds, -bound), bound) * 1_000
    }

    /// Microseconds to milliseconds, rounded up.
    static func millisecondsRoundingUp(_ micros: Int64) -> Int64 {
        let (quotient, remainder) = micros.quotientAndRemainder(dividingBy: 1_000)
        return remainder > 0 ? quotient + 1 : quotient
    }
}
