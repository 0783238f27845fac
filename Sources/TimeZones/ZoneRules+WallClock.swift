/// Conversions between instants and local wall time (SPEC §4b):
/// a wall-clock time that does not exist that day (spring forward) means
/// the first instant after the gap; one that occurs twice (fall back)
/// means the first.
extension ZoneRules {
    /// What the zone's clocks show at `milliseconds` (UNIX ms): local date,
    /// time, offset, DST and abbreviation.
    public func localTime(at milliseconds: Int64) -> LocalTime {
        let ms = Self.clamp(milliseconds)
        let type = type(atSecond: Self.floorDivide(ms, 1000))
        let local = ms + Int64(type.utcOffsetSeconds) * 1000
        let days = Self.floorDivide(local, 86_400_000)
        return LocalTime(date: LocalDate(daysSinceEpoch: days), millisecondsIntoDay: local - days * 86_400_000, type: type)
    }

    /// The UTC offset in seconds at `milliseconds`.
    public func utcOffsetSeconds(at milliseconds: Int64) -> Int32 {
        type(atSecond: Self.floorDivide(Self.clamp(milliseconds), 1000)).utcOffsetSeconds
    }

    /// The instant (UNIX ms) the wall clock shows `time` on `date`.
    ///
    /// Exactly: the first instant whose local time is at or past
    /// `date time`. So a time inside a gap gives the instant the gap ends
    /// (02:30 on a spring-forward night in New York: 03:00 EDT), and a
    /// time that occurs twice gives its first occurrence (01:30 on a
    /// fall-back night: 01:30 EDT). A skipped day (Pacific/Apia,
    /// 2011-12-30) gives the instant after the skip for every time of it.
    public func instant(on date: LocalDate, at time: TimeOfDay) -> Int64 {
        instant(localSecond: date.daysSinceEpoch * 86_400 + time.secondsIntoDay) * 1000
    }

    /// The first UNIX second whose local time (second + offset) is at or
    /// past `wall` (local seconds since 1970-01-01T00:00 local).
    func instant(localSecond wall: Int64) -> Int64 {
        // Local time f(u) = u + offset(u) rises with slope 1 between
        // transitions. Before lo it is below `wall`; walk the segments
        // from there to the first u with f(u) >= wall.
        // Bounded by the transitions there can be on the way (the listed
        // ones, and at most a few of the footer's in the ~2 days walked).
        var u = wall - maximumOffset - 1
        for _ in 0..<(transitions.count + 16) {
            let offset = Int64(type(atSecond: u).utcOffsetSeconds)
            if u + offset >= wall { return u }  // a gap ends at a transition
            let candidate = wall - offset
            guard let next = nextTransition(afterSecond: u), next <= candidate else { return candidate }
            u = next
        }
        return u  // not reached: past the last transition the candidate is returned
    }

    /// The first instant at or after `milliseconds` that is the instant of
    /// `time` on some local date, as ``instant(on:at:)`` resolves it (one
    /// instant per local day: a repeated time counts at its first
    /// occurrence only, a skipped one at the end of its gap).
    public func nextInstant(atOrAfter milliseconds: Int64, localTime time: TimeOfDay) -> Int64 {
        let ms = Self.clamp(milliseconds)
        var date = localTime(at: ms).date.adding(days: -1)
        var candidate = instant(on: date, at: time)
        for _ in 0..<8 where candidate < ms {
            date = date.adding(days: 1)
            candidate = instant(on: date, at: time)
        }
        return candidate
    }

    /// The first instant of local `date` (its midnight, or the end of a gap
    /// that swallows its midnight).
    public func startOfDay(_ date: LocalDate) -> Int64 {
        instant(on: date, at: TimeOfDay(hour: 0, minute: 0)!)
    }

    /// The local date at `milliseconds` and its bounds: from the first
    /// instant of that date to the first instant of the next (usually 24 h;
    /// 23 or 25 h across DST changes; 0 for a skipped day).
    public func localDay(containing milliseconds: Int64) -> (date: LocalDate, start: Int64, end: Int64) {
        let date = localTime(at: milliseconds).date
        return (date, startOfDay(date), startOfDay(date.adding(days: 1)))
    }
}
