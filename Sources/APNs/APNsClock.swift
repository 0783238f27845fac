import TLSTransport

/// Time for the APNs client: JWT `iat`, token age, backoff waits, deadlines.
/// Tests inject a manual clock; production uses ``SystemAPNsClock``.
public protocol APNsClock: Sendable {
    /// The current wall-clock time.
    func now() -> EpochTime
    /// Suspends for `duration` of this clock's time.
    func sleep(for duration: Duration) async throws
}

/// The real clock.
public struct SystemAPNsClock: APNsClock {
    public init() {}
    public func now() -> EpochTime { .now }
    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}

extension Duration {
    var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
