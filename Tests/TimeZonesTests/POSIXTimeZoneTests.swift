import Testing
@testable import TimeZones

/// The TZif footer's POSIX TZ strings: hostile ones first, then the
/// evaluation checked against the listed transitions of real zones.
@Suite struct POSIXTimeZoneTests {
    @Test(arguments: [
        "", "ES", "EST", "EST+", "EST5:", "EST5:60", "EST25", "EST5EDT", "EST5EDT,", "EST5EDT,M3.2.0",
        "EST5EDT,M3.2.0,", "EST5EDT,M13.1.0,M11.1.0", "EST5EDT,M0.1.0,M11.1.0", "EST5EDT,M3.6.0,M11.1.0",
        "EST5EDT,M3.2.7,M11.1.0", "EST5EDT,J0,J365", "EST5EDT,J366,J1", "EST5EDT,366,1", "EST5EDT,M3.2.0/168,M11.1.0",
        "EST5EDT,M3.2.0/-168,M11.1.0", "EST5EDT,M3.2.0/2:60,M11.1.0", "EST5EDT,M3.2.0,M11.1.0x", "<+1030", "<+1>-1",
        "<+10 30>-10:30", "EST5\u{0}", "E\u{0}T5", "EST0000005", "EST5EDT4,M3.2.0,M11.1.0,M12.1.0", "5EST",
        "EST5EDT,M3.22.0,M11.1.0", String(repeating: "A", count: 300) + "5",
    ])
    func malformedStringsAreTypedErrors(text: String) {
        #expect(throws: TZifError.self) { try POSIXTimeZone(parsing: text) }
    }

    @Test func wellFormedStringsParse() throws {
        let ny = try POSIXTimeZone(parsing: "EST5EDT,M3.2.0,M11.1.0")
        #expect(ny.standard == LocalTimeType(utcOffsetSeconds: -18000, isDaylightSaving: false, abbreviation: "EST"))
        #expect(ny.daylight?.type == LocalTimeType(utcOffsetSeconds: -14400, isDaylightSaving: true, abbreviation: "EDT"))
        #expect(ny.daylight?.start == .init(day: .monthWeekDay(month: 3, week: 2, weekday: 0), time: 7200))
        let lordHowe = try POSIXTimeZone(parsing: "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0")
        #expect(lordHowe.standard.utcOffsetSeconds == 37800 && lordHowe.standard.abbreviation == "+1030")
        #expect(lordHowe.daylight?.type.utcOffsetSeconds == 39600)
        let nuuk = try POSIXTimeZone(parsing: "<-02>2<-01>,M3.5.0/-1,M10.5.0/0")  // negative rule time (RFC 8536 v3)
        #expect(nuuk.daylight?.start.time == -3600)
        let allYear = try POSIXTimeZone(parsing: "EST5EDT,0/0,J365/25")  // DST all year (RFC 8536 §3.3.1)
        #expect(allYear.daylight?.end == .init(day: .julianNoLeap(365), time: 25 * 3600))
        let tokyo = try POSIXTimeZone(parsing: "JST-9")
        #expect(tokyo.daylight == nil && tokyo.standard.utcOffsetSeconds == 32400)
        let santiago = try POSIXTimeZone(parsing: "<-04>4<-03>,M9.1.6/24,M4.1.6/24")
        #expect(santiago.daylight?.start.time == 86400)
        let explicitSeconds = try POSIXTimeZone(parsing: "XXX-1:02:03YYY-2:00:00,J60/1:30:15,300/+2")
        #expect(explicitSeconds.standard.utcOffsetSeconds == 3723 && explicitSeconds.daylight?.start.time == 5415)
    }

    @Test func dstAllYearIsAlwaysDaylight() throws {
        let zone = try POSIXTimeZone(parsing: "EST5EDT,0/0,J365/25")
        for second in stride(from: Int64(1_900_000_000), to: 1_990_000_000, by: 86_400 * 7 + 3_601) {
            #expect(zone.type(atSecond: second).isDaylightSaving, "at \(utc(second * 1000))")
        }
    }

    @Test func julianDaysSkipOrCountFebruary29() {
        let j60 = POSIXTimeZone.Rule(day: .julianNoLeap(60), time: 0)  // always March 1
        #expect(LocalDate(daysSinceEpoch: j60.daysSinceEpoch(year: 2024)) == date(2024, 3, 1))
        #expect(LocalDate(daysSinceEpoch: j60.daysSinceEpoch(year: 2025)) == date(2025, 3, 1))
        let n59 = POSIXTimeZone.Rule(day: .zeroBased(59), time: 0)  // Feb 29 in leap years
        #expect(LocalDate(daysSinceEpoch: n59.daysSinceEpoch(year: 2024)) == date(2024, 2, 29))
        #expect(LocalDate(daysSinceEpoch: n59.daysSinceEpoch(year: 2025)) == date(2025, 3, 1))
        let lastSunday = POSIXTimeZone.Rule(day: .monthWeekDay(month: 3, week: 5, weekday: 0), time: 0)
        #expect(LocalDate(daysSinceEpoch: lastSunday.daysSinceEpoch(year: 2026)) == date(2026, 3, 29))
        #expect(LocalDate(daysSinceEpoch: lastSunday.daysSinceEpoch(year: 2027)) == date(2027, 3, 28))
    }

    /// The footer must agree with the fat tzdata's listed transitions up to
    /// 2037: every listed change of local time type from 2030 on is the footer's next one,
    /// and the footer's type matches the table's every 5 hours in between.
    @Test(arguments: [
        "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Australia/Sydney", "America/Santiago",
        "America/Nuuk", "Pacific/Auckland", "Asia/Tokyo", "Asia/Tehran", "Europe/London", "America/Havana",
    ])
    func footerAgreesWithTheListedTransitions(zoneName: String) throws {
        let zone = Zones.load(zoneName)
        let footer = try #require(zone.footer)
        let from: Int64 = 1_893_456_000  // 2030-01-01
        // Fat files also list a no-op transition at 2^31 − 1 (2038-01-19) for 32-bit readers: skip those.
        let listed = zone.transitions.indices.filter { i in
            i > 0 && zone.transitions[i] > from && zone.types[Int(zone.transitionTypes[i])] != zone.types[Int(zone.transitionTypes[i - 1])]
        }.map { zone.transitions[$0] }
        for t in listed {
            #expect(footer.nextTransition(afterSecond: t - 1) == t, "\(zoneName) transition \(utc(t * 1000))")
        }
        guard let last = zone.transitions.last, last > from else { return }
        for s in stride(from: from, to: last, by: 5 * 3600) {
            #expect(footer.type(atSecond: s) == zone.type(atSecond: s), "\(zoneName) at \(utc(s * 1000))")
        }
    }

    /// Rules whose times spill into the next or previous year (RFC 8536
    /// allows ±167 h): the type is constant up to the next transition
    /// reported, so the conversions' walks stay exact and never trap.
    @Test(arguments: [
        "EST5EDT,0/0,J365/25", "EST5EDT,J365/25,J1", "XXX3YYY,J1/-167,J365/167", "<-02>2<-01>,M3.5.0/-1,M10.5.0/0",
        "EST5EDT,M3.2.0/167,M3.2.0/-167", "AAA-12BBB-14,M12.5.6/167,M1.1.0/-167", "EST5EDT,365/0,0/0",
    ])
    func spillingRulesStayConsistent(rule: String) throws {
        var builder = TZifBuilder()
        builder.transitions = []
        builder.transitionTypes = []
        builder.footer = Array("\n\(rule)\n".utf8)
        let zone = try TZif.parse(builder.bytes, name: "Spill")
        let footer = try #require(zone.footer)
        let night = try #require(QuietPeriod(parsing: "22:00-08:00"))
        var t = ms("2029-12-01T00:00:00Z")
        while t < ms("2032-02-01T00:00:00Z") {
            let second = t / 1000
            if let next = footer.nextTransition(afterSecond: second) {
                #expect(next > second)
                #expect(footer.type(atSecond: next - 1) == footer.type(atSecond: second), "\(rule) between \(utc(t)) and \(utc(next * 1000))")
            }
            let local = zone.localTime(at: t)
            #expect(zone.instant(on: local.date, at: TimeOfDay(hour: local.hour, minute: local.minute)!) <= t)
            if let end = zone.endOfQuietPeriod(night, containing: t) { #expect(end > t && !zone.isInside(night, at: end)) }
            t += 49_003_000  // 13 h 36 min 43 s
        }
    }
}
