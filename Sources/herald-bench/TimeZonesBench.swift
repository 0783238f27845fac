#if canImport(Glibc)
import Glibc
#endif
import HeraldPrimitives
import TimeZones

/// ns per time-zone conversion (the delivery policy's budget is ≤ 5 µs per
/// device push for all its decisions). Zones are loaded once, as the
/// service would; instants cycle through 64 spread over a year so no
/// lookup is a repeat of the last.
func benchTimeZones() throws {
    let directory = ZoneInfoDirectory()
    let newYork = try directory.load("America/New_York")
    let berlin = try directory.load("Europe/Berlin")
    let lordHowe = try directory.load("Australia/Lord_Howe")
    let start: Int64 = 1_767_225_600_000  // 2026-01-01T00:00:00Z
    let instants = (0..<64).map { start + Int64($0) * 20_221_000 * 24 }  // ~5.6 days apart, through 2026
    let future = instants.map { $0 + 74 * 365 * 86_400_000 }  // ~2100: the footer rule
    let dates = (0..<64).map { LocalDate(daysSinceEpoch: 20_454 + Int64($0) * 5) }
    let nine = TimeOfDay(hour: 9, minute: 0)!, halfPastTwo = TimeOfDay(hour: 2, minute: 30)!
    let night = QuietPeriod(parsing: "22:00-08:00")!
    var i = 0
    func next() -> Int { i = (i + 1) & 63; return i }

    measure("TZ utc->local New_York 2026 (table)", unit: "conversion") { Int(newYork.localTime(at: instants[next()]).millisecondsIntoDay) }
    measure("TZ utc->local New_York 2100 (footer rule)", unit: "conversion") { Int(newYork.localTime(at: future[next()]).millisecondsIntoDay) }
    measure("TZ local->utc Berlin 02:30 (gaps, repeats)", unit: "conversion") { Int(truncatingIfNeeded: berlin.instant(on: dates[next()], at: halfPastTwo)) }
    measure("TZ next 09:00 Lord_Howe", unit: "conversion") { Int(truncatingIfNeeded: lordHowe.nextInstant(atOrAfter: instants[next()], localTime: nine)) }
    measure("TZ quiet hours inside+end Berlin", unit: "conversion") {
        let t = instants[next()] + Int64(i) * 3_600_000
        return berlin.isInside(night, at: t) ? Int(truncatingIfNeeded: berlin.endOfQuietPeriod(night, containing: t) ?? 0) : 1
    }

    if filter.isEmpty || "TZ memory".contains(filter) { try residentCostOfZones(directory) }
}

/// RSS growth per loaded zone: 2,000 separate loads of America/New_York
/// (a "fat" file of 236 transitions) kept alive, measured from /proc/self/statm.
func residentCostOfZones(_ directory: ZoneInfoDirectory) throws {
    func resident() throws -> Int {
        let fields = try POSIXFile.readText("/proc/self/statm").split(separator: " ")
        return (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
    let count = 2_000
    var zones: [ZoneRules] = []
    zones.reserveCapacity(count)
    let before = try resident()
    for _ in 0..<count { zones.append(try directory.load("America/New_York")) }
    let after = try resident()
    print("TZ memory: \((after - before) / count) bytes RSS per loaded America/New_York (\(count) loads, \(zones.count) kept)")
}
