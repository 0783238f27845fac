@testable import HeraldPrimitives
import Testing
@testable import HeraldCore

@Suite("RFC 3339")
struct RFC3339Tests {
    static let valid: [(String, Int64, Int32)] = [
        ("1970-01-01T00:00:00Z", 0, 0),
        ("2025-01-25T18:32:00Z", 1_737_829_920, 0),
        ("2025-01-25t18:32:00z", 1_737_829_920, 0),
        ("2025-01-25 18:32:00Z", 1_737_829_920, 0),
        ("2025-01-25T20:32:00+02:00", 1_737_829_920, 0),
        ("2025-01-25T13:02:00-05:30", 1_737_829_920, 0),
        ("2025-01-25T18:32:00+0000", 1_737_829_920, 0),
        ("2025-01-25T18:32:00.5Z", 1_737_829_920, 500_000_000),
        ("2025-01-25T18:32:00.123456789Z", 1_737_829_920, 123_456_789),
        ("2025-01-25T18:32:00.1234567891234Z", 1_737_829_920, 123_456_789),
        ("2025-01-25T18:32:00,25Z", 1_737_829_920, 250_000_000),
        ("2024-02-29T23:59:59Z", 1_709_251_199, 0),
        ("2000-03-01T00:00:00+23:59", 951_782_460, 0),
        ("1969-12-31T23:59:59.75Z", -1, 750_000_000),
        ("9999-12-31T23:59:59Z", 253_402_300_799, 0),
    ]

    @Test("valid timestamps", arguments: valid)
    func parsesValid(text: String, seconds: Int64, nanos: Int32) throws {
        let t = try RFC3339.parse(text)
        #expect(t == Timestamp(seconds: seconds, nanoseconds: nanos))
    }

    static let invalid: [(String, String)] = [
        ("", "date"),
        ("2025-01-25", "T between"),
        ("2025-01-25T18:32:00", "offset"),
        ("2025-01-25T18:32Z", "hh:mm:ss"),
        ("2025-13-01T00:00:00Z", "month 13"),
        ("2025-02-29T00:00:00Z", "day 29"),
        ("2025-04-31T00:00:00Z", "day 31"),
        ("2025-01-25T24:00:00Z", "hour 24"),
        ("2025-01-25T23:60:00Z", "minute 60"),
        ("2025-01-25T23:59:60Z", "leap"),
        ("2025-01-25T18:32:00.Z", "decimal point"),
        ("2025-01-25T18:32:00+2:00", "offset"),
        ("2025-01-25T18:32:00+24:00", "offset out of range"),
        ("2025-01-25T18:32:00Zjunk", "after the timestamp"),
        ("0000-01-01T00:00:00Z", "year"),
        ("25-01-25T18:32:00Z", "date"),
        ("2025-1-25T18:32:00Z", "date"),
        ("tomorrow", "date"),
    ]

    @Test("invalid timestamps", arguments: invalid)
    func rejectsInvalid(text: String, reasonContains: String) {
        #expect {
            try RFC3339.parse(text)
        } throws: { error in
            (error as? RFC3339ParseError)?.reason.contains(reasonContains) == true
        }
    }

    static let formatCases: [(Timestamp, String)] = [
        (Timestamp(seconds: 0), "1970-01-01T00:00:00Z"),
        (Timestamp(seconds: 1_737_829_920), "2025-01-25T18:32:00Z"),
        (Timestamp(seconds: 1_737_829_920, nanoseconds: 500_000_000), "2025-01-25T18:32:00.5Z"),
        (Timestamp(seconds: 1_737_829_920, nanoseconds: 1), "2025-01-25T18:32:00.000000001Z"),
        (Timestamp(seconds: -1, nanoseconds: 750_000_000), "1969-12-31T23:59:59.75Z"),
        (Timestamp(seconds: 1_709_251_199), "2024-02-29T23:59:59Z"),
    ]

    @Test("formatting as UTC", arguments: formatCases)
    func formats(t: Timestamp, expected: String) throws {
        #expect(RFC3339.format(t) == expected)
        #expect(try RFC3339.parse(expected) == t)
    }

    @Test("format/parse round trip over many days")
    func roundTripDays() throws {
        var s: Int64 = -86_400 * 365 * 3
        while s < 86_400 * 365 * 60 {
            let t = Timestamp(seconds: s, nanoseconds: Int32(s % 1000) * 1_000_000)
            #expect(try RFC3339.parse(RFC3339.format(t)) == t)
            s += 86_400 * 17 + 3_607
        }
    }

    @Test("timestamp normalizes nanoseconds")
    func normalizes() {
        #expect(Timestamp(seconds: 10, nanoseconds: -1) == Timestamp(seconds: 9, nanoseconds: 999_999_999))
        #expect(Timestamp(seconds: 10, nanoseconds: 1_500_000_000) == Timestamp(seconds: 11, nanoseconds: 500_000_000))
        #expect(Timestamp(seconds: 5, nanoseconds: 1).ceilingSeconds == 6)
    }
}
