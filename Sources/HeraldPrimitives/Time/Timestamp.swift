/// An instant on the UTC time line: seconds since the UNIX epoch plus
/// nanoseconds, like `google.protobuf.Timestamp`.
///
/// The core never reads a clock; callers pass `now` as a `Timestamp`.
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Whole seconds since 1970-01-01T00:00:00Z (may be negative).
    public var seconds: Int64
    /// Nanoseconds within the second, `0..<1_000_000_000`.
    public var nanoseconds: Int32

    /// Creates an instant, normalizing `nanoseconds` into `0..<1e9`.
    public init(seconds: Int64, nanoseconds: Int32 = 0) {
        var s = seconds
        var n = Int64(nanoseconds)
        s += n / 1_000_000_000
        n %= 1_000_000_000
        if n < 0 { n += 1_000_000_000; s -= 1 }
        self.seconds = s
        self.nanoseconds = Int32(n)
    }

    /// The instant `seconds` whole seconds later (earlier when negative).
    @inlinable
    public func adding(seconds delta: Int64) -> Timestamp {
        var t = self
        t.seconds += delta
        return t
    }

    /// Seconds from `other` to `self` as a Double (diagnostics, comparisons).
    public func secondsSince(_ other: Timestamp) -> Double {
        Double(seconds - other.seconds) + Double(nanoseconds - other.nanoseconds) / 1e9
    }

    /// The UNIX epoch second at or after this instant (for `apns-expiration`).
    public var ceilingSeconds: Int64 { nanoseconds == 0 ? seconds : seconds + 1 }

    public static func < (a: Timestamp, b: Timestamp) -> Bool {
        (a.seconds, a.nanoseconds) < (b.seconds, b.nanoseconds)
    }

    /// RFC 3339 in UTC (see ``RFC3339/format(_:)``).
    public var description: String { RFC3339.format(self) }
}
