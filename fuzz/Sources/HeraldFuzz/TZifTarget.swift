import TimeZones

/// Input: any bytes, read as a TZif file. A file that parses must convert
/// without trapping, and its conversions must keep their promises: the
/// local time of an instant (to the minute) maps back at or before it (the
/// first instant showing that time or later), and a quiet period's end is
/// after the instant.
enum TZifTarget {
    static let instants: [Int64] = [
        -2_208_988_800_000, -1, 0, 1_300_000_000_000, 1_767_225_600_000, 2_147_483_647_000, 4_102_444_800_000,
    ]

    static func run(_ input: [UInt8]) {
        guard let zone = try? TZif.parse(input, name: "fuzz") else { return }
        let night = QuietPeriod(parsing: "22:00-08:00")!
        for t in instants {
            let local = zone.localTime(at: t)
            guard let time = TimeOfDay(hour: local.hour, minute: local.minute) else { preconditionFailure("local time out of range") }
            let back = zone.instant(on: local.date, at: time)
            precondition(back <= t, "wall time maps back after the instant it came from")
            _ = zone.nextInstant(atOrAfter: t, localTime: time)
            if let end = zone.endOfQuietPeriod(night, containing: t) {
                precondition(end > t, "quiet period ends before the instant inside it")
            }
        }
    }
}
