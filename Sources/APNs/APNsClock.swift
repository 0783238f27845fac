public import NIOCore
public import TLSTransport

/// Time for the APNs client: JWT `iat`, token age, backoff waits, deadlines.
/// Tests inject a manual clock; production uses ``SystemAPNsClock``.
public protocol APNsClock: Sendable {
    /// The current wall-clock time.
    func now() -> EpochTime
    /// Suspends for `duration` of this clock's time.
    func sleep(for duration: Duration) async throws
    /// Runs `body` on `loop` once `duration` of this clock's time has passed
    /// (response timeouts). The default sleeps in a task; the system clock
    /// uses the event loop's timer wheel instead (one per request in flight).
    func schedule(after duration: Duration, on loop: any EventLoop, _ body: @escaping @Sendable () -> Void) -> APNsTimer
}

/// A pending ``APNsClock/schedule(after:on:_:)``; `cancel` stops it if it has not run.
public struct APNsTimer: Sendable {
    public let cancel: @Sendable () -> Void
    public init(cancel: @escaping @Sendable () -> Void) { self.cancel = cancel }
}

extension APNsClock {
    public func schedule(after duration: Duration, on loop: any EventLoop, _ body: @escaping @Sendable () -> Void) -> APNsTimer {
        let task = Task {
            do { try await sleep(for: duration) } catch { return }
            if !Task.isCancelled { loop.execute(body) }
        }
        return APNsTimer { task.cancel() }
    }
}

/// The real clock.
public struct SystemAPNsClock: APNsClock {
    public init() {}
    public func now() -> EpochTime { .now }
    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
    public func schedule(after duration: Duration, on loop: any EventLoop, _ body: @escaping @Sendable () -> Void) -> APNsTimer {
        let scheduled = loop.scheduleTask(in: .nanoseconds(Int64(duration.seconds * 1e9)), body)
        return APNsTimer { scheduled.cancel() }
    }
}

extension Duration {
    var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
