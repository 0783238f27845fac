import Testing
@testable import TimeZones

/// Conversions against the machine's tzdata (Debian 2025b, fat files):
/// expected values from `zdump -v`. Gaps move forward, repeats take the first.
@Suite struct ZoneConversionTests {
    struct ToLocal: Sendable, CustomTestStringConvertible {
        var zone: String, utc: String, wall: String, offset: Int32, dst: Bool, abbreviation: String
        var testDescription: String { "\(zone) \(utc)" }
    }

    static let toLocal: [ToLocal] = [
        // New York, 2026: spring forward 02:00 EST -> 03:00 EDT, fall back 02:00 EDT -> 01:00 EST.
        .init(zone: "America/New_York", utc: "2026-03-08T06:59:59Z", wall: "2026-03-08 01:59:59", offset: -18000, dst: false, abbreviation: "EST"),
        .init(zone: "America/New_York", utc: "2026-03-08T07:00:00Z", wall: "2026-03-08 03:00:00", offset: -14400, dst: true, abbreviation: "EDT"),
        .init(zone: "America/New_York", utc: "2026-11-01T05:59:59Z", wall: "2026-11-01 01:59:59", offset: -14400, dst: true, abbreviation: "EDT"),
        .init(zone: "America/New_York", utc: "2026-11-01T06:00:00Z", wall: "2026-11-01 01:00:00", offset: -18000, dst: false, abbreviation: "EST"),
        // Berlin, 2026.
        .init(zone: "Europe/Berlin", utc: "2026-03-29T00:59:59Z", wall: "2026-03-29 01:59:59", offset: 3600, dst: false, abbreviation: "CET"),
        .init(zone: "Europe/Berlin", utc: "2026-03-29T01:00:00Z", wall: "2026-03-29 03:00:00", offset: 7200, dst: true, abbreviation: "CEST"),
        .init(zone: "Europe/Berlin", utc: "2026-10-25T00:59:59Z", wall: "2026-10-25 02:59:59", offset: 7200, dst: true, abbreviation: "CEST"),
        .init(zone: "Europe/Berlin", utc: "2026-10-25T01:00:00Z", wall: "2026-10-25 02:00:00", offset: 3600, dst: false, abbreviation: "CET"),
        // Lord Howe: a 30-minute shift.
        .init(zone: "Australia/Lord_Howe", utc: "2026-04-04T14:59:59Z", wall: "2026-04-05 01:59:59", offset: 39600, dst: true, abbreviation: "+11"),
        .init(zone: "Australia/Lord_Howe", utc: "2026-04-04T15:00:00Z", wall: "2026-04-05 01:30:00", offset: 37800, dst: false, abbreviation: "+1030"),
        .init(zone: "Australia/Lord_Howe", utc: "2026-10-03T15:29:59Z", wall: "2026-10-04 01:59:59", offset: 37800, dst: false, abbreviation: "+1030"),
        .init(zone: "Australia/Lord_Howe", utc: "2026-10-03T15:30:00Z", wall: "2026-10-04 02:30:00", offset: 39600, dst: true, abbreviation: "+11"),
        // Apia skipped 2011-12-30 (−10 -> +14).
        .init(zone: "Pacific/Apia", utc: "2011-12-30T09:59:59Z", wall: "2011-12-29 23:59:59", offset: -36000, dst: true, abbreviation: "-10"),
        .init(zone: "Pacific/Apia", utc: "2011-12-30T10:00:00Z", wall: "2011-12-31 00:00:00", offset: 50400, dst: true, abbreviation: "+14"),
        .init(zone: "Pacific/Apia", utc: "2026-07-01T00:00:00Z", wall: "2026-07-01 13:00:00", offset: 46800, dst: false, abbreviation: "+13"),
        // No DST; UTC.
        .init(zone: "Asia/Tokyo", utc: "2026-07-01T00:00:00Z", wall: "2026-07-01 09:00:00", offset: 32400, dst: false, abbreviation: "JST"),
        .init(zone: "Asia/Tokyo", utc: "2026-01-15T20:30:00Z", wall: "2026-01-16 05:30:00", offset: 32400, dst: false, abbreviation: "JST"),
        .init(zone: "UTC", utc: "2026-07-01T12:34:56Z", wall: "2026-07-01 12:34:56", offset: 0, dst: false, abbreviation: "UTC"),
        // 2100: past the listed transitions, from the footer rule.
        .init(zone: "America/New_York", utc: "2100-03-14T06:59:59Z", wall: "2100-03-14 01:59:59", offset: -18000, dst: false, abbreviation: "EST"),
        .init(zone: "America/New_York", utc: "2100-03-14T07:00:00Z", wall: "2100-03-14 03:00:00", offset: -14400, dst: true, abbreviation: "EDT"),
        .init(zone: "America/New_York", utc: "2100-11-07T06:00:00Z", wall: "2100-11-07 01:00:00", offset: -18000, dst: false, abbreviation: "EST"),
        .init(zone: "Australia/Lord_Howe", utc: "2100-10-02T15:30:00Z", wall: "2100-10-03 02:30:00", offset: 39600, dst: true, abbreviation: "+11"),
        // Before 1970, and before standard time (LMT −4:56:02).
        .init(zone: "America/New_York", utc: "1960-04-24T07:00:00Z", wall: "1960-04-24 03:00:00", offset: -14400, dst: true, abbreviation: "EDT"),
        .init(zone: "America/New_York", utc: "1960-10-30T06:00:00Z", wall: "1960-10-30 01:00:00", offset: -18000, dst: false, abbreviation: "EST"),
        .init(zone: "America/New_York", utc: "1883-11-18T16:59:59Z", wall: "1883-11-18 12:03:57", offset: -17762, dst: false, abbreviation: "LMT"),
        .init(zone: "America/New_York", utc: "1969-12-31T23:59:59.5Z", wall: "1969-12-31 18:59:59.500", offset: -18000, dst: false, abbreviation: "EST"),
    ]

    @Test(arguments: toLocal)
    func utcToLocal(_ c: ToLocal) {
        let t = Zones.load(c.zone).localTime(at: ms(c.utc))
        #expect(wall(t) == c.wall)
        #expect(t.utcOffsetSeconds == c.offset)
        #expect(t.isDaylightSaving == c.dst)
        #expect(t.abbreviation == c.abbreviation)
    }

    struct ToUTC: Sendable, CustomTestStringConvertible {
        var zone: String, date: LocalDate, time: String, utc: String
        var testDescription: String { "\(zone) \(date) \(time)" }
    }

    static let toUTC: [ToUTC] = [
        .init(zone: "America/New_York", date: date(2026, 3, 8), time: "01:59", utc: "2026-03-08T06:59:00Z"),
        .init(zone: "America/New_York", date: date(2026, 3, 8), time: "02:00", utc: "2026-03-08T07:00:00Z"),  // gap: its end
        .init(zone: "America/New_York", date: date(2026, 3, 8), time: "02:30", utc: "2026-03-08T07:00:00Z"),  // gap: its end
        .init(zone: "America/New_York", date: date(2026, 3, 8), time: "03:00", utc: "2026-03-08T07:00:00Z"),
        .init(zone: "America/New_York", date: date(2026, 3, 8), time: "03:01", utc: "2026-03-08T07:01:00Z"),
        .init(zone: "America/New_York", date: date(2026, 11, 1), time: "00:59", utc: "2026-11-01T04:59:00Z"),
        .init(zone: "America/New_York", date: date(2026, 11, 1), time: "01:00", utc: "2026-11-01T05:00:00Z"),  // repeat: first (EDT)
        .init(zone: "America/New_York", date: date(2026, 11, 1), time: "01:30", utc: "2026-11-01T05:30:00Z"),  // repeat: first (EDT)
        .init(zone: "America/New_York", date: date(2026, 11, 1), time: "02:00", utc: "2026-11-01T07:00:00Z"),
        .init(zone: "Europe/Berlin", date: date(2026, 3, 29), time: "02:30", utc: "2026-03-29T01:00:00Z"),
        .init(zone: "Europe/Berlin", date: date(2026, 10, 25), time: "02:30", utc: "2026-10-25T00:30:00Z"),
        .init(zone: "Europe/Berlin", date: date(2026, 10, 25), time: "03:00", utc: "2026-10-25T02:00:00Z"),
        .init(zone: "Australia/Lord_Howe", date: date(2026, 10, 4), time: "02:15", utc: "2026-10-03T15:30:00Z"),  // 30-min gap
        .init(zone: "Australia/Lord_Howe", date: date(2026, 10, 4), time: "02:30", utc: "2026-10-03T15:30:00Z"),
        .init(zone: "Australia/Lord_Howe", date: date(2026, 4, 5), time: "01:45", utc: "2026-04-04T14:45:00Z"),  // repeat: first (+11)
        .init(zone: "Australia/Lord_Howe", date: date(2026, 4, 5), time: "02:00", utc: "2026-04-04T15:30:00Z"),
        .init(zone: "Pacific/Apia", date: date(2011, 12, 29), time: "23:59", utc: "2011-12-30T09:59:00Z"),
        .init(zone: "Pacific/Apia", date: date(2011, 12, 30), time: "00:00", utc: "2011-12-30T10:00:00Z"),  // the skipped day
        .init(zone: "Pacific/Apia", date: date(2011, 12, 30), time: "09:00", utc: "2011-12-30T10:00:00Z"),
        .init(zone: "Pacific/Apia", date: date(2011, 12, 30), time: "23:59", utc: "2011-12-30T10:00:00Z"),
        .init(zone: "Pacific/Apia", date: date(2011, 12, 31), time: "00:00", utc: "2011-12-30T10:00:00Z"),
        .init(zone: "Pacific/Apia", date: date(2011, 12, 31), time: "09:00", utc: "2011-12-30T19:00:00Z"),
        .init(zone: "Asia/Tokyo", date: date(2026, 7, 1), time: "09:00", utc: "2026-07-01T00:00:00Z"),
        .init(zone: "UTC", date: date(2026, 7, 1), time: "23:59", utc: "2026-07-01T23:59:00Z"),
        .init(zone: "America/New_York", date: date(2100, 3, 14), time: "02:30", utc: "2100-03-14T07:00:00Z"),
        .init(zone: "America/New_York", date: date(2100, 11, 7), time: "01:30", utc: "2100-11-07T05:30:00Z"),
        .init(zone: "America/New_York", date: date(1960, 4, 24), time: "02:30", utc: "1960-04-24T07:00:00Z"),
        .init(zone: "America/New_York", date: date(1960, 10, 30), time: "01:30", utc: "1960-10-30T05:30:00Z"),
        .init(zone: "America/New_York", date: date(1883, 11, 18), time: "12:02", utc: "1883-11-18T16:58:02Z"),  // LMT→EST repeat: first (LMT)
    ]

    @Test(arguments: toUTC)
    func localToUTC(_ c: ToUTC) {
        #expect(utc(Zones.load(c.zone).instant(on: c.date, at: hm(c.time))) == c.utc)
    }

    /// Every minute-aligned instant of 2026 (stepping 7 minutes) maps back to
    /// itself, except in the second pass of a repeat, which maps to the first.
    @Test(arguments: ["America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Pacific/Apia", "America/Santiago"])
    func roundTripsExceptSecondPasses(zoneName: String) {
        let zone = Zones.load(zoneName)
        var t = ms("2026-01-01T00:00:00Z")
        let end = ms("2027-01-01T00:00:00Z")
        var secondPasses = 0
        while t < end {
            let local = zone.localTime(at: t)
            let back = zone.instant(on: local.date, at: TimeOfDay(hour: local.hour, minute: local.minute)!)
            if back != t {
                secondPasses += 1
                #expect(back < t && wall(zone.localTime(at: back)) == wall(local), "\(zoneName) \(utc(t))")
            }
            t += 7 * 60_000
        }
        #expect(secondPasses < 20)  // one repeated hour a year at most (9 steps of 7 min)
    }

    @Test func nextInstantAtLocalTime() {
        let ny = Zones.load("America/New_York"), berlin = Zones.load("Europe/Berlin"), tokyo = Zones.load("Asia/Tokyo")
        // Inside a gap: the end of the gap.
        #expect(utc(ny.nextInstant(atOrAfter: ms("2026-03-07T12:00:00Z"), localTime: hm("02:30"))) == "2026-03-08T07:00:00Z")
        // Exactly at: itself; a millisecond later: the next day.
        #expect(utc(berlin.nextInstant(atOrAfter: ms("2026-06-01T07:00:00Z"), localTime: hm("09:00"))) == "2026-06-01T07:00:00Z")
        #expect(utc(berlin.nextInstant(atOrAfter: ms("2026-06-01T07:00:00.001Z"), localTime: hm("09:00"))) == "2026-06-02T07:00:00Z")
        // Between the two passes of 01:30: the first was that day's, so the next day's.
        #expect(utc(ny.nextInstant(atOrAfter: ms("2026-11-01T05:45:00Z"), localTime: hm("01:30"))) == "2026-11-02T06:30:00Z")
        // Local send time 09:00 in two zones: 7 h apart in summer, 8 h in winter.
        let from = ms("2026-06-01T00:00:00Z")
        #expect(berlin.nextInstant(atOrAfter: from, localTime: hm("09:00")) - tokyo.nextInstant(atOrAfter: from, localTime: hm("09:00")) == 7 * 3_600_000)
        #expect(ny.nextInstant(atOrAfter: from, localTime: hm("09:00")) - tokyo.nextInstant(atOrAfter: from, localTime: hm("09:00")) == 13 * 3_600_000)
        // Apia's skipped day: 09:00 on 30 Dec 2011 does not exist: the instant after the skip.
        let apia = Zones.load("Pacific/Apia")
        #expect(utc(apia.nextInstant(atOrAfter: ms("2011-12-29T20:00:00Z"), localTime: hm("09:00"))) == "2011-12-30T10:00:00Z")
        #expect(utc(apia.nextInstant(atOrAfter: ms("2011-12-30T10:00:00.001Z"), localTime: hm("09:00"))) == "2011-12-30T19:00:00Z")
        // Far future and far past.
        #expect(utc(ny.nextInstant(atOrAfter: ms("2100-03-13T12:00:00Z"), localTime: hm("02:30"))) == "2100-03-14T07:00:00Z")
        #expect(utc(ny.nextInstant(atOrAfter: ms("1960-04-23T12:00:00Z"), localTime: hm("02:30"))) == "1960-04-24T07:00:00Z")
    }

    @Test func localDayBoundaries() {
        let ny = Zones.load("America/New_York")
        let spring = ny.localDay(containing: ms("2026-03-08T12:00:00Z"))
        #expect(spring.date == date(2026, 3, 8) && utc(spring.start) == "2026-03-08T05:00:00Z" && utc(spring.end) == "2026-03-09T04:00:00Z")
        #expect(spring.end - spring.start == 23 * 3_600_000)
        let fall = ny.localDay(containing: ms("2026-11-01T12:00:00Z"))
        #expect(fall.end - fall.start == 25 * 3_600_000)
        let apia = Zones.load("Pacific/Apia")
        #expect(apia.startOfDay(date(2011, 12, 30)) == apia.startOfDay(date(2011, 12, 31)))  // a day of length 0
        #expect(apia.localDay(containing: ms("2011-12-30T10:00:00Z")).date == date(2011, 12, 31))
        #expect(apia.localDay(containing: ms("2011-12-30T09:59:59.999Z")).date == date(2011, 12, 29))
        let berlin = Zones.load("Europe/Berlin").localDay(containing: ms("2026-07-15T21:59:59.999Z"))
        #expect(berlin.date == date(2026, 7, 15) && berlin.end - berlin.start == 86_400_000)
    }

    @Test func extremeInstantsAreClampedNotTrapped() {
        for name in ["America/New_York", "Pacific/Apia", "UTC", "Australia/Lord_Howe"] {
            let zone = Zones.load(name)
            for t in [Int64.min, Int64.max, Int64.min + 1, -62_135_596_800_001, 253_402_300_800_000] {
                _ = zone.localTime(at: t)
                _ = zone.nextInstant(atOrAfter: t, localTime: hm("23:59"))
                _ = zone.endOfQuietPeriod(QuietPeriod(parsing: "22:00-08:00")!, containing: t)
                _ = zone.localDay(containing: t)
            }
            #expect(zone.localTime(at: Int64.max).date.year == 9999)
            #expect(zone.localTime(at: Int64.min).date.year == 1)
        }
    }
}
