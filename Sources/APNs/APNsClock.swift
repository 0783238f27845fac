public import HeraldPrimitives
public import NIOCore

/// Time for the APNs client: JWT `iat`, token age, backoff waits, and every
/// timer the client arms (response timeouts, request deadlines, reconnect
/// backoff). Production uses ``SystemAPNsClock``; a test injects a manual
/// clock, and then its `advance` alone fires those timers.
public protocol APNsClock: Sendable {
    /// The current wall-clock time.
    func now() -> Timestamp
    /// Suspends for `duration` of this clock's time (retry pauses, in the
    /// caller's task).
    func sleep(for duration: Duration) async throws
    /// Runs `body` on `loop` once `duration` of this clock's time has passed,
    /// unless the returned timer is cancelled first. The system clock uses the
    /// event loop's timer wheel (no task per timer).
    func scheduleTimer(after duration: Duration, on loop: any EventLoop, _ body: @escaping @Sendable () -> Void) -> APNsTimer
}

extension APNsClock {
    /// Runs `body` on `loop` once this clock reads `deadline` or later (at
    /// once, on the loop, when it already does).
    public func scheduleTimer(at deadline: Timestamp, on loop: any EventLoop, _ body: @escaping @Sendable () -> Void) -> APNsTimer {
        let remaining = max(deadline.timeIntervalSince(now()), 0)
        return scheduleTimer(after: .nanoseconds(Int64(remaining * 1e9)), on: loop, body)
    }
}

/// A pending ``APNsClock/scheduleTimer(after:on:_:)``; `cancel` stops it if it has not run.
public struct APNsTimer: Sendable {
    private let onCancel: @Sendable () -> Void
    public init(cancel: @escaping @Sendable () -> Void) { onCancel = cancel }
    public func cancel() { onCancel() }
}

/// The real clock: `CLOCK_REALTIME` for instants, the event loop's timers
/// and `Task.sleep` for waits.
public struct SystemAPNsClock: APNsClock {
    public init() {}
    public func now() -> Timestamp { .now }
    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
    public func scheduleTimer(after duration: Duration, on loop: any EventLoop, _ body: @escaping @Sendable () -> Void) -> APNsTimer {
        let scheduled = loop.scheduleTask(in: TimeAmount(duration), body)
        return APNsTimer { scheduled.cancel() }
    }
}
