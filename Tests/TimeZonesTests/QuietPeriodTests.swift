import Testing
@testable import TimeZones

/// Quiet hours `HH:MM-HH:MM` (half-open, may wrap midnight) on the wall
/// clock, across DST changes.
@Suite struct QuietPeriodTests {
    @Test(arguments: [
        "", "22:00", "22:00-22:00", "24:00-08:00", "22:00-08:60", "2:00-08:00", "22:00-8:00", "22:00-08:00-",
        "22:00–08:00", "22:0008:00", "22:00 -08:00", " 22:00-08:00", "ab:cd-08:00", "-22:00-08:00", "22:00-\u{0}8:00",
        "２２:00-08:00", "22.00-08.00", "+2:00-08:00",
    ])
    func malformedPeriodsAreRejected(text: String) {
        #expect(QuietPeriod(parsing: text) == nil)
    }

    @Test func halfOpenAndWrapping() throws {
        let night = try #require(QuietPeriod(parsing: "22:00-08:00"))
        #expect(night.wrapsMidnight && night.description == "22:00-08:00")
        #expect(night.contains(millisecondsIntoDay: 22 * 3_600_000))
        #expect(!night.contains(millisecondsIntoDay: 22 * 3_600_000 - 1))
        #expect(night.contains(millisecondsIntoDay: 0))
        #expect(night.contains(millisecondsIntoDay: 8 * 3_600_000 - 1))
        #expect(!night.contains(millisecondsIntoDay: 8 * 3_600_000))
        let lunch = try #require(QuietPeriod(parsing: "12:00-13:30"))
        #expect(!lunch.wrapsMidnight && lunch.contains(millisecondsIntoDay: 13 * 3_600_000) && !lunch.contains(millisecondsIntoDay: 0))
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var zone: String, period: String, at: String, end: String?
        var testDescription: String { "\(zone) \(period) at \(at)" }
    }

    static let cases: [Case] = [
        // Berlin 22:00-08:00 over the spring-forward night: 9 h of UTC.
        .init(zone: "Europe/Berlin", period: "22:00-08:00", at: "2026-03-28T20:59:59Z", end: nil),
        .init(zone: "Europe/Berlin", period: "22:00-08:00", at: "2026-03-28T21:00:00Z", end: "2026-03-29T06:00:00Z"),
        .init(zone: "Europe/Berlin", period: "22:00-08:00", at: "2026-03-29T01:00:00Z", end: "2026-03-29T06:00:00Z"),
        .init(zone: "Europe/Berlin", period: "22:00-08:00", at: "2026-03-29T05:59:59.999Z", end: "2026-03-29T06:00:00Z"),
        .init(zone: "Europe/Berlin", period: "22:00-08:00", at: "2026-03-29T06:00:00Z", end: nil),
        // ... and over the fall-back night: 11 h.
        .init(zone: "Europe/Berlin", period: "22:00-08:00", at: "2026-10-24T20:00:00Z", end: "2026-10-25T07:00:00Z"),
        .init(zone: "Europe/Berlin", period: "22:00-08:00", at: "2026-10-25T00:30:00Z", end: "2026-10-25T07:00:00Z"),  // 02:30 CEST
        .init(zone: "Europe/Berlin", period: "22:00-08:00", at: "2026-10-25T01:30:00Z", end: "2026-10-25T07:00:00Z"),  // 02:30 CET
        .init(zone: "Europe/Berlin", period: "22:00-08:00", at: "2026-10-25T07:00:00Z", end: nil),
        // The end inside a gap: the period ends when the gap does (03:00 EDT).
        .init(zone: "America/New_York", period: "22:00-02:30", at: "2026-03-08T03:30:00Z", end: "2026-03-08T07:00:00Z"),
        .init(zone: "America/New_York", period: "22:00-02:30", at: "2026-03-08T06:59:59Z", end: "2026-03-08T07:00:00Z"),
        .init(zone: "America/New_York", period: "22:00-02:30", at: "2026-03-08T07:00:00Z", end: nil),
        // A start inside a gap: quiet from the gap's end.
        .init(zone: "America/New_York", period: "02:30-06:00", at: "2026-03-08T06:59:59Z", end: nil),
        .init(zone: "America/New_York", period: "02:30-06:00", at: "2026-03-08T07:00:00Z", end: "2026-03-08T10:00:00Z"),
        // The end inside a repeat: each pass of the wall clock is read as it shows.
        .init(zone: "America/New_York", period: "00:00-01:30", at: "2026-11-01T05:10:00Z", end: "2026-11-01T05:30:00Z"),  // 01:10 EDT
        .init(zone: "America/New_York", period: "00:00-01:30", at: "2026-11-01T05:45:00Z", end: nil),  // 01:45 EDT
        .init(zone: "America/New_York", period: "00:00-01:30", at: "2026-11-01T06:10:00Z", end: "2026-11-01T06:30:00Z"),  // 01:10 EST
        // Lord Howe's 30-minute gap (02:00 -> 02:30) inside a wrapping period.
        .init(zone: "Australia/Lord_Howe", period: "23:00-02:15", at: "2026-10-03T13:00:00Z", end: "2026-10-03T15:30:00Z"),
        .init(zone: "Australia/Lord_Howe", period: "23:00-07:00", at: "2026-10-03T13:00:00Z", end: "2026-10-03T20:00:00Z"),
        // Apia's skipped day: quiet 22:00-08:00 from the 29th ends at 08:00 on the 31st.
        .init(zone: "Pacific/Apia", period: "22:00-08:00", at: "2011-12-30T08:30:00Z", end: "2011-12-30T18:00:00Z"),
        // No DST; UTC; far future (footer); before 1970.
        .init(zone: "Asia/Tokyo", period: "22:00-08:00", at: "2026-07-01T14:00:00Z", end: "2026-07-01T23:00:00Z"),
        .init(zone: "UTC", period: "12:00-13:00", at: "2026-07-01T12:59:59.999Z", end: "2026-07-01T13:00:00Z"),
        .init(zone: "America/New_York", period: "22:00-02:30", at: "2100-03-14T03:30:00Z", end: "2100-03-14T07:00:00Z"),
        .init(zone: "America/New_York", period: "22:00-08:00", at: "1960-10-30T03:00:00Z", end: "1960-10-30T13:00:00Z"),
    ]

    @Test(arguments: cases)
    func insideAndEnd(_ c: Case) throws {
        let zone = Zones.load(c.zone)
        let period = try #require(QuietPeriod(parsing: c.period))
        let t = ms(c.at)
        #expect(zone.isInside(period, at: t) == (c.end != nil))
        #expect(zone.endOfQuietPeriod(period, containing: t).map(utc) == c.end)
        if let end = zone.endOfQuietPeriod(period, containing: t) {
            #expect(end > t && !zone.isInside(period, at: end))
            #expect(zone.isInside(period, at: end - 1))
        }
    }
}
