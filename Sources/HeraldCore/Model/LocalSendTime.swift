/// A Schedule's `local_send_time` (SPEC §3, §4b): a wall-clock time of day,
/// `HH:MM` from 00:00 to 23:59, at which each device's push is due in that
/// device's own time zone. Parsed strictly: exactly five ASCII bytes, two
/// digits, a colon, two digits (no `7:05`, no seconds, no other digits).
public struct LocalSendTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Minutes after local midnight, 0 to 1439.
    public let minuteOfDay: Int

    /// The hour, 0 to 23.
    public var hour: Int { minuteOfDay / 60 }
    /// The minute, 0 to 59.
    public var minute: Int { minuteOfDay % 60 }

    /// A time from its hour (0–23) and minute (0–59); nil outside those.
    public init?(hour: Int, minute: Int) {
        guard (0...23).contains(hour), (0...59).contains(minute) else { return nil }
        minuteOfDay = hour * 60 + minute
    }

    /// Parses `HH:MM` (00:00 to 23:59, exactly that shape); nil otherwise.
    public init?(parsing text: some StringProtocol) {
        let bytes = Array(text.utf8.prefix(6))
        guard bytes.count == 5, bytes[2] == UInt8(ascii: ":") else { return nil }
        func digit(_ b: UInt8) -> Int? { (0x30...0x39).contains(b) ? Int(b - 0x30) : nil }
        guard let h1 = digit(bytes[0]), let h2 = digit(bytes[1]), let m1 = digit(bytes[3]), let m2 = digit(bytes[4]) else {
            return nil
        }
        self.init(hour: h1 * 10 + h2, minute: m1 * 10 + m2)
    }

    /// Why `text` is not a valid `local_send_time` (the client's text quoted,
    /// truncated), or nil when it is.
    public static func problem(_ text: String) -> String? {
        LocalSendTime(parsing: text) == nil
            ? "must be a time of day \"HH:MM\" (00:00 to 23:59), got \(ErrorText.quote(text))" : nil
    }

    /// `HH:MM`.
    public var description: String {
        let h = hour, m = minute
        return (h < 10 ? "0" : "") + String(h) + ":" + (m < 10 ? "0" : "") + String(m)
    }

    public static func < (a: LocalSendTime, b: LocalSendTime) -> Bool { a.minuteOfDay < b.minuteOfDay }
}
