import HeraldPrimitives

/// A POSIX TZ string as found in a TZif footer (RFC 8536 §3.3), e.g.
/// `EST5EDT,M3.2.0,M11.1.0` or `<+1030>-10:30<+11>-11,M10.1.0,M4.1.0`:
/// the rule for instants after a zone's last listed transition.
///
/// Accepted: quoted (`<+0330>`) and alphabetic names of 3+ characters;
/// offsets `[+-]hh[:mm[:ss]]` up to 24:59:59; rule dates `Jn`, `n` and
/// `Mm.w.d`; rule times `[+-]hh[:mm[:ss]]` with hours −167…167 (the RFC 8536
/// version 3 extension, accepted in every version). A DST name without a
/// rule is rejected (zic always writes the rule).
public struct POSIXTimeZone: Sendable, Hashable {
    /// Standard time.
    public var standard: LocalTimeType
    /// Daylight saving time and when it starts and ends each year; nil for a
    /// zone without DST.
    public var daylight: Daylight?

    /// DST's local time type and its yearly start and end.
    public struct Daylight: Sendable, Hashable {
        /// The DST local time type.
        public var type: LocalTimeType
        /// When DST starts, in local standard time.
        public var start: Rule
        /// When DST ends, in local daylight time.
        public var end: Rule
    }

    /// One yearly transition: a day of the year and a local time of day.
    public struct Rule: Sendable, Hashable {
        /// How the day is named.
        public enum Day: Sendable, Hashable {
            /// `Jn`: day 1–365, February 29 never counted.
            case julianNoLeap(Int)
            /// `n`: zero-based day 0–365, February 29 counted.
            case zeroBased(Int)
            /// `Mm.w.d`: weekday `d` (0 = Sunday) of week `w` (1–4, 5 = last) of month `m`.
            case monthWeekDay(month: Int, week: Int, weekday: Int)
        }
        /// The day.
        public var day: Day
        /// Seconds after that day's local midnight (−167 h … 167 h).
        public var time: Int64

        /// Days since 1970-01-01 of this rule's day in `year`.
        func daysSinceEpoch(year: Int) -> Int64 {
            switch day {
            case let .julianNoLeap(n):
                let jan1 = Int64(RFC3339.daysFromCivil(year: year, month: 1, day: 1))
                return jan1 + Int64(n - 1) + (RFC3339.isLeap(year) && n >= 60 ? 1 : 0)
            case let .zeroBased(n):
                return Int64(RFC3339.daysFromCivil(year: year, month: 1, day: 1)) + Int64(n)
            case let .monthWeekDay(month, week, weekday):
                let first = Int64(RFC3339.daysFromCivil(year: year, month: month, day: 1))
                var dayOfMonth = 1 + (weekday - LocalDate.weekday(daysSinceEpoch: first) + 7) % 7 + (week - 1) * 7
                let length = RFC3339.daysInMonth(year: year, month: month)
                while dayOfMonth > length { dayOfMonth -= 7 }
                return first + Int64(dayOfMonth - 1)
            }
        }
    }

    /// The local time type in effect at `second` (UNIX seconds).
    ///
    /// The rule's transitions form one sequence over the years (each year's
    /// start, then its end; a later year's after an earlier year's at the
    /// same instant, so `0/0,J365/25` is DST all year, as RFC 8536 §3.3.1
    /// says); the type is the one the last transition at or before `second`
    /// set. Years Y−2…Y+2 around `second`'s year are enough: with rule times
    /// within ±167 h a year's transitions stay within 8 days of it.
    func type(atSecond second: Int64) -> LocalTimeType {
        guard let daylight else { return standard }
        var last: (at: Int64, year: Int, isStart: Bool)?
        forEachTransition(near: second, daylight) { at, year, isStart in
            if at <= second, last.map({ (at, year, isStart ? 0 : 1) > ($0.at, $0.year, $0.isStart ? 0 : 1) }) ?? true {
                last = (at, year, isStart)
            }
        }
        return last?.isStart == true ? daylight.type : standard
    }

    /// The first rule transition strictly after `second`, nil without DST.
    func nextTransition(afterSecond second: Int64) -> Int64? {
        guard let daylight else { return nil }
        var best: Int64?
        forEachTransition(near: second, daylight) { at, _, _ in
            if at > second, best.map({ at < $0 }) ?? true { best = at }
        }
        return best
    }

    /// Calls `body` with each transition of the years Y−2…Y+2 (Y: the year
    /// of `second` in standard time): its instant, year, and whether DST starts.
    private func forEachTransition(near second: Int64, _ daylight: Daylight, _ body: (Int64, Int, Bool) -> Void) {
        let year = Self.year(ofSecond: second + Int64(standard.utcOffsetSeconds))
        for y in (year - 2)...(year + 2) {
            body(transition(daylight.start, year: y, offset: standard.utcOffsetSeconds), y, true)
            body(transition(daylight.end, year: y, offset: daylight.type.utcOffsetSeconds), y, false)
        }
    }

    private func transition(_ rule: Rule, year: Int, offset: Int32) -> Int64 {
        rule.daysSinceEpoch(year: year) * 86_400 + rule.time - Int64(offset)
    }

    static func year(ofSecond s: Int64) -> Int {
        var days = s / 86_400
        if s % 86_400 < 0 { days -= 1 }
        return Int(RFC3339.civilFromDays(days).0)
    }
}

extension POSIXTimeZone {
    /// Parses a POSIX TZ string (without the footer's newlines).
    public init(parsing bytes: ArraySlice<UInt8>) throws(TZifError) {
        var p = POSIXTZParser(bytes: Array(bytes))
        self = try p.parse()
    }

    /// Parses a POSIX TZ string.
    public init(parsing text: String) throws(TZifError) {
        try self.init(parsing: ArraySlice(text.utf8))
    }
}
