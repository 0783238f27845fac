import HeraldPrimitives

/// A calendar date (proleptic Gregorian) with no zone: a local date.
/// Years 1–9999, like RFC 3339.
public struct LocalDate: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The year, 1–9999.
    public let year: Int
    /// The month, 1–12.
    public let month: Int
    /// The day of the month, 1–31 (checked against the month and leap years).
    public let day: Int

    /// The date, or nil when it is not a calendar date of years 1–9999.
    public init?(year: Int, month: Int, day: Int) {
        guard (1...9999).contains(year), (1...12).contains(month),
              day >= 1, day <= RFC3339.daysInMonth(year: year, month: month) else { return nil }
        self.year = year
        self.month = month
        self.day = day
    }

    /// The date `days` days after 1970-01-01 (before it when negative),
    /// clamped to 0001-01-01…9999-12-31.
    public init(daysSinceEpoch days: Int64) {
        let d = min(max(days, LocalDate.firstDay), LocalDate.lastDay)
        let (y, m, dd) = RFC3339.civilFromDays(d)
        year = Int(y)
        month = Int(m)
        day = Int(dd)
    }

    /// Days since 1970-01-01 (negative before it).
    public var daysSinceEpoch: Int64 { Int64(RFC3339.daysFromCivil(year: year, month: month, day: day)) }

    /// The date `count` days later (earlier when negative), clamped to years 1–9999.
    public func adding(days count: Int64) -> LocalDate { LocalDate(daysSinceEpoch: daysSinceEpoch + count) }

    /// Day of the week, 0 = Sunday … 6 = Saturday.
    public var weekday: Int { LocalDate.weekday(daysSinceEpoch: daysSinceEpoch) }

    /// `YYYY-MM-DD`.
    public var description: String {
        func pad(_ v: Int, _ w: Int) -> String { let s = String(v); return String(repeating: "0", count: max(0, w - s.count)) + s }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }

    public static func < (a: LocalDate, b: LocalDate) -> Bool { (a.year, a.month, a.day) < (b.year, b.month, b.day) }

    static func weekday(daysSinceEpoch d: Int64) -> Int {
        let w = (d + 4) % 7  // 1970-01-01 was a Thursday
        return Int(w < 0 ? w + 7 : w)
    }

    static let firstDay = Int64(RFC3339.daysFromCivil(year: 1, month: 1, day: 1))
    static let lastDay = Int64(RFC3339.daysFromCivil(year: 9999, month: 12, day: 31))
}
