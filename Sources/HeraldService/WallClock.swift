#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads the system's wall clock; the one place the service layer does.
/// (The domain core never reads a clock: it is handed `now`.)
enum WallClock {
    /// Milliseconds since the UNIX epoch.
    static func nowMilliseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }

}
