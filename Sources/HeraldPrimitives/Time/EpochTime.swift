#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A wall-clock moment as seconds since 1970-01-01T00:00:00Z (what
/// Foundation's `Date` is, without linking Foundation): Herald's one type for
/// a wall-clock instant outside the domain core (APNs deadlines and JWT
/// `iat`, the simulator's token age; the core's own is `Timestamp`, whole ms).
public struct EpochTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Seconds since 1970 (fractional).
    public var timeIntervalSince1970: Double

    public init(timeIntervalSince1970: Double) {
        self.timeIntervalSince1970 = timeIntervalSince1970
    }

    /// The current time (`CLOCK_REALTIME`).
    public static var now: EpochTime {
        let spec = realtime()
        return EpochTime(timeIntervalSince1970: Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9)
    }

    /// The current time in whole milliseconds since 1970, exact (no
    /// floating point): what the store, the scheduler and Status count in.
    public static func nowMilliseconds() -> Int64 {
        let spec = realtime()
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }

    /// The one place Herald reads the system's wall clock. (The domain core
    /// never reads a clock: it is handed `now`.)
    private static func realtime() -> timespec {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return spec
    }

    /// Milliseconds since 1970.
    public init(millisecondsSince1970: Int64) {
        self.timeIntervalSince1970 = Double(millisecondsSince1970) / 1000
    }

    /// `self` moved by `seconds`.
    public func addingTimeInterval(_ seconds: Double) -> EpochTime {
        EpochTime(timeIntervalSince1970: timeIntervalSince1970 + seconds)
    }

    /// Seconds from `other` to `self` (negative when `self` is earlier).
    public func timeIntervalSince(_ other: EpochTime) -> Double {
        timeIntervalSince1970 - other.timeIntervalSince1970
    }

    public static func < (lhs: EpochTime, rhs: EpochTime) -> Bool {
        lhs.timeIntervalSince1970 < rhs.timeIntervalSince1970
    }

    public var description: String { "EpochTime(\(timeIntervalSince1970))" }
}

extension Duration {
    /// This duration in seconds (fractional), for arithmetic with ``EpochTime``.
    public var timeInterval: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
