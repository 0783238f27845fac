public import HeraldPrimitives
public import NIOCore

/// Time for the FCM client: JWT `iat`/`exp`, access-token expiry and
/// refresh, backoff waits, the rate bucket, and every timer the client arms
/// (response timeouts, deadlines, reconnect backoff, keep-alive). Production
/// uses ``SystemFCMClock``; a test injects a manual clock, and then its
/// `advance` alone fires those timers. Same shape as APNs' `APNsClock`.
public protocol FCMClock: Sendable {
    /// The current wall-clock time.
    func now() -> Timestamp
    /// Suspends for `duration` of this clock's time (retry pauses, rate waits).
    func sleep(for duration: Duration) async throws
    /// Runs `body` on `loop` once `duration` of this clock's time has passed,
    /// unless the returned timer is cancelled first.
    func scheduleTimer(after duration: Duration, on loop: any EventLoop, _ body: @escaping @Sendable () -> Void) -> FCMTimer
}

extension FCMClock {
    /// Runs `body` on `loop` once this clock reads `deadline` or later.
    public func scheduleTimer(at deadline: Timestamp, on loop: any EventLoop, _ body: @escaping @Sendable () -> Void) -> FCMTimer {
        let remaining = max(deadline.timeIntervalSince(now()), 0)
        return scheduleTimer(after: .nanoseconds(Int64(remaining * 1e9)), on: loop, body)
    }
}

/// A pending ``FCMClock/scheduleTimer(after:on:_:)``; `cancel` stops it if it has not run.
public struct FCMTimer: Sendable {
    private let onCancel: @Sendable () -> Void
    public init(cancel: @escaping @Sendable () -> Void) { onCancel = cancel }
    public func cancel() { onCancel() }
}

/// The real clock: `CLOCK_REALTIME` for instants, the event loop's timers
/// and `Task.sleep` for waits.
public struct SystemFCMClock: FCMClock {
    public init() {}
    public func now() -> Timestamp { .now }
    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
    public func scheduleTimer(after duration: Duration, on loop: any EventLoop, _ body: @escaping @Sendable () -> Void) -> FCMTimer {
        let scheduled = loop.scheduleTask(in: TimeAmount(duration), body)
        return FCMTimer { scheduled.cancel() }
    }
}
