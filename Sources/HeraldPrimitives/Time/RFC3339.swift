/// Why a string is not an RFC 3339 timestamp.
public struct RFC3339ParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong, e.g. `"missing UTC offset (Z or ±hh:mm)"`.
    public var reason: String
    public var description: String { reason }
}

/// RFC 3339 (the ISO 8601 profile used by APIs) parsing and formatting,
/// without Foundation.
///
/// Accepted: `YYYY-MM-DD` `T` (or `t` or one space) `hh:mm:ss`, optional
/// fraction of any length (digits past nanoseconds are truncated), and a
/// required offset: `Z`/`z`, `±hh:mm` or the ISO 8601 basic `±hhmm`.
/// Years 0001–9999; calendar dates checked (leap years); hours 00–23,
/// minutes 00–59, seconds 00–59 (leap second `60` is rejected: the UNIX time
/// line has no slot for it); offsets up to ±23:59.
public enum RFC3339 {
    /// Parses `text` into an instant.
    public static func parse(_ text: String) throws(RFC3339ParseError) -> Timestamp {
        var text = text
        let result = text.withUTF8 { b in Result { () throws(RFC3339ParseError) -> Timestamp in try parse(bytes: b) } }
        return try result.get()
    }

    private static func fail(_ reason: String) -> RFC3339ParseError { RFC3339ParseError(reason: reason) }

    static func parse(bytes b: UnsafeBufferPointer<UInt8>) throws(RFC3339ParseError) -> Timestamp {
        func digits(_ at: Int, _ count: Int) -> Int? {
            guard at + count <= b.count else { return nil }
            var v = 0
            for i in at..<(at + count) {
                let c = b[i]
                guard c >= 0x30 && c <= 0x39 else { return nil }
                v = v * 10 + Int(c - 0x30)
            }
            return v
        }
        func byte(_ at: Int) -> UInt8? { at < b.count ? b[at] : nil }

        guard let year = digits(0, 4), byte(4) == UInt8(ascii: "-"),
              let month = digits(5, 2), byte(7) == UInt8(ascii: "-"),
              let day = digits(8, 2)
        else { throw fail("expected a date as YYYY-MM-DD") }
        guard let sep = byte(10), sep == UInt8(ascii: "T") || sep == UInt8(ascii: "t") || sep == UInt8(ascii: " ") else {
            throw fail("expected T between date and time")
        }
        guard let hour = digits(11, 2), byte(13) == UInt8(ascii: ":"),
              let minute = digits(14, 2), byte(16) == UInt8(ascii: ":"),
              let second = digits(17, 2)
        else { throw fail("expected a time as hh:mm:ss") }
        guard year >= 1 else { throw fail("year 0000 is out of range") }
        guard (1...12).contains(month) else { throw fail("month \(month) is out of range") }
        guard day >= 1 && day <= daysInMonth(year: year, month: month) else { throw fail("day \(day) is out of range for \(year)-\(month < 10 ? "0" : "")\(month)") }
        guard hour <= 23 else { throw fail("hour \(hour) is out of range") }
        guard minute <= 59 else { throw fail("minute \(minute) is out of range") }
        if second == 60 { throw fail("leap seconds are not supported") }
        guard second <= 59 else { throw fail("second \(second) is out of range") }

        var i = 19
        var nanos = 0
        if byte(i) == UInt8(ascii: ".") || byte(i) == UInt8(ascii: ",") {
            i += 1
            var count = 0
            while let c = byte(i), c >= 0x30 && c <= 0x39 {
                if count < 9 { nanos = nanos * 10 + Int(c - 0x30) }
                count += 1
                i += 1
            }
            guard count > 0 else { throw fail("expected digits after the decimal point") }
            if count < 9 { for _ in count..<9 { nanos *= 10 } }
        }
        var offsetSeconds = 0
        guard let o = byte(i) else { throw fail("missing UTC offset (Z or ±hh:mm)") }
        if o == UInt8(ascii: "Z") || o == UInt8(ascii: "z") {
            i += 1
        } else if o == UInt8(ascii: "+") || o == UInt8(ascii: "-") {
            guard let oh = digits(i + 1, 2) else { throw fail("invalid UTC offset") }
            let om: Int
            if byte(i + 3) == UInt8(ascii: ":") {
                guard let m = digits(i + 4, 2) else { throw fail("invalid UTC offset") }
                om = m
                i += 6
            } else {
                guard let m = digits(i + 3, 2) else { throw fail("invalid UTC offset") }
                om = m
                i += 5
            }
            guard oh <= 23 && om <= 59 else { throw fail("UTC offset out of range") }
            offsetSeconds = (oh * 3600 + om * 60) * (o == UInt8(ascii: "-") ? -1 : 1)
        } else {
            throw fail("missing UTC offset (Z or ±hh:mm)")
        }
        guard i == b.count else { throw fail("unexpected characters after the timestamp") }

        let days = daysFromCivil(year: year, month: month, day: day)
        let secs = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetSeconds)
        return Timestamp(seconds: secs, nanoseconds: Int32(nanos))
    }

    /// Formats an instant as RFC 3339 UTC: `YYYY-MM-DDThh:mm:ssZ`, with a
    /// fraction (trailing zeros trimmed) only when nanoseconds are non-zero.
    public static func format(_ t: Timestamp) -> String {
        var days = t.seconds / 86_400
        var rem = t.seconds % 86_400
        if rem < 0 { rem += 86_400; days -= 1 }
        let (y, m, d) = civilFromDays(days)
        // At most "-yyyy-mm-ddThh:mm:ss.nnnnnnnnnZ" (32 bytes): one allocation.
        return String(unsafeUninitializedCapacity: 40) { out in
            var index = 0
            func put(_ value: Int64, _ width: Int) {
                var v = value
                var i = index + width - 1
                while i >= index {
                    out[i] = UInt8(truncatingIfNeeded: v % 10) + 0x30
                    v /= 10
                    i -= 1
                }
                index += width
            }
            func char(_ c: Unicode.Scalar) {
                out[index] = UInt8(ascii: c)
                index += 1
            }
            if y < 0 { char("-") }
            put(abs(y), 4); char("-")
            put(m, 2); char("-")
            put(d, 2); char("T")
            put(rem / 3600, 2); char(":")
            put(rem / 60 % 60, 2); char(":")
            put(rem % 60, 2)
            if t.nanoseconds != 0 {
                char(".")
                var n = Int64(t.nanoseconds)
                var width = 9
                while n % 10 == 0 { n /= 10; width -= 1 }
                put(n, width)
            }
            char("Z")
            return index
        }
    }

    /// Whether `y` is a leap year of the proleptic Gregorian calendar.
    public static func isLeap(_ y: Int) -> Bool { (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 }

    /// The number of days of `month` (1–12) in `year`.
    public static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant).
    public static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The proleptic Gregorian date of a day count since 1970-01-01.
    public static func civilFromDays(_ z: Int64) -> (Int64, Int64, Int64) {
        let z = z + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }
}
