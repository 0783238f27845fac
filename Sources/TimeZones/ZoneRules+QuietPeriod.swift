/// Quiet hours against a zone's wall clock.
///
/// Quietness is read off the wall clock: an instant is inside when the
/// local time it shows is inside the period. So on a fall-back night a
/// repeated hour that is quiet is quiet both times, and a period whose end
/// falls in a spring-forward gap ends when the gap does.
extension ZoneRules {
    /// Whether the local time at `milliseconds` is inside `period`.
    public func isInside(_ period: QuietPeriod, at milliseconds: Int64) -> Bool {
        period.contains(millisecondsIntoDay: localTime(at: milliseconds).millisecondsIntoDay)
    }

    /// The end of the quiet period containing `milliseconds`: the first
    /// instant after it whose local time is outside `period`; nil when
    /// `milliseconds` is not inside.
    public func endOfQuietPeriod(_ period: QuietPeriod, containing milliseconds: Int64) -> Int64? {
        var u = Self.clamp(milliseconds)
        guard isInside(period, at: u) else { return nil }
        let end = period.end.secondsIntoDay * 1000
        // Between transitions the wall clock advances with the instant:
        // the end is `end - now` of wall time away, unless a transition
        // comes first; then go on from the transition.
        for _ in 0..<(transitions.count + 16) {
            var distance = end - localTime(at: u).millisecondsIntoDay
            if distance <= 0 { distance += 86_400_000 }
            let candidate = u + distance
            guard let next = nextTransition(afterSecond: Self.floorDivide(u, 1000)),
                  next <= Self.floorDivide(candidate, 1000) else { return candidate }
            u = next * 1000
            if !isInside(period, at: u) { return u }
        }
        return u
    }
}
