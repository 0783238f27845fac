/// A wall-clock time of day to the minute, `HH:MM` (00:00–23:59).
public struct TimeOfDay: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// 0–23.
    public let hour: Int
    /// 0–59.
    public let minute: Int

    /// The time, or nil when hour or minute is out of range.
    public init?(hour: Int, minute: Int) {
        guard (0...23).contains(hour), (0...59).contains(minute) else { return nil }
        self.hour = hour
        self.minute = minute
    }

    /// Parses exactly `HH:MM` (two digits each, 00:00–23:59); nil otherwise.
    public init?(parsing text: Substring) {
        let u = Array(text.utf8)
        func digit(_ i: Int) -> Int? { u[i] >= 0x30 && u[i] <= 0x39 ? Int(u[i] - 0x30) : nil }
        guard u.count == 5, u[2] == UInt8(ascii: ":"),
              let h1 = digit(0), let h2 = digit(1), let m1 = digit(3), let m2 = digit(4) else { return nil }
        self.init(hour: h1 * 10 + h2, minute: m1 * 10 + m2)
    }

    /// Parses exactly `HH:MM`; nil otherwise.
    public init?(parsing text: String) { self.init(parsing: Substring(text)) }

    /// Seconds after midnight.
    public var secondsIntoDay: Int64 { Int64(hour * 3600 + minute * 60) }

    /// `HH:MM`.
    public var description: String { (hour < 10 ? "0" : "") + "\(hour):" + (minute < 10 ? "0" : "") + "\(minute)" }

    public static func < (a: TimeOfDay, b: TimeOfDay) -> Bool { (a.hour, a.minute) < (b.hour, b.minute) }
}
