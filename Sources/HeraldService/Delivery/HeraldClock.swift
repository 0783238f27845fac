import HeraldPrimitives

/// The scheduler's clock: wall time in milliseconds, and a way to wait for
/// a moment. Tests drive a manual clock; production uses `SystemClock`.
public protocol HeraldClock: Sendable {
    /// Milliseconds since the UNIX epoch.
    func now() -> Int64
    /// Returns at or after `milliseconds` (or throws when cancelled).
    func sleep(until milliseconds: Int64) async throws
}

/// The system's wall clock.
public struct SystemClock: HeraldClock {
    public init() {}

    public func now() -> Int64 { Timestamp.nowMilliseconds() }

    public func sleep(until milliseconds: Int64) async throws {
        let delta = milliseconds - now()
        if delta > 0 { try await Task.sleep(for: .milliseconds(delta)) }
    }
}
