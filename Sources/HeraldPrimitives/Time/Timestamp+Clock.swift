#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reading the wall clock, and arithmetic in (fractional) seconds, for the
/// code at the edges: the APNs client (deadlines, backoff, JWT `iat`), the
/// simulator (token age), the scheduler's system clock. (The domain core
/// never reads a clock: it is handed `now`.)
extension Timestamp {
    /// The current time (`CLOCK_REALTIME`).
    public static var now: Timestamp {
        let spec = realtime()
        return Timestamp(seconds: Int64(spec.tv_sec), nanoseconds: Int32(spec.tv_nsec))
    }

    /// The current time in whole milliseconds since 1970, exact (no
    /// floating point): what the store, the scheduler and Status count in.
    public static func nowMilliseconds() -> Int64 {
        let spec = realtime()
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }

    /// The one place Herald reads the system's wall clock.
    private static func realtime() -> timespec {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)  // CLOCK_REALTIME with a valid pointer cannot fail
        return spec
    }

    /// `seconds` since 1970 (fractional), to the nearest nanosecond.
    public init(timeIntervalSince1970 seconds: Double) {
        let whole = seconds.rounded(.down)
        self.init(seconds: Int64(whole), nanoseconds: Int32(((seconds - whole) * 1e9).rounded()))
    }

    /// Seconds since 1970 (fractional).
    public var timeIntervalSince1970: Double { Double(seconds) + Double(nanoseconds) / 1e9 }

    /// `self` moved by `seconds` (fractional; negative moves back).
    public func addingTimeInterval(_ seconds: Double) -> Timestamp {
        let whole = seconds.rounded(.towardZero)
        let fraction = Int32(((seconds - whole) * 1e9).rounded())  // within ±1e9
        return Timestamp(seconds: self.seconds + Int64(whole), nanoseconds: nanoseconds + fraction)
    }

    /// Seconds from `other` to `self` (negative when `self` is earlier).
    public func timeIntervalSince(_ other: Timestamp) -> Double { secondsSince(other) }
}

extension Duration {
    /// This duration in seconds (fractional), for arithmetic with ``Timestamp``.
    public var timeInterval: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
