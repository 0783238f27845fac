public import HeraldPrimitives
public import NIOCore

/// Time for a provider client (APNs, FCM): token ages, backoff waits, and
/// every timer the HTTP/2 pool arms (response timeouts, request deadlines,
/// reconnect backoff, keep-alive). Production uses ``SystemProviderClock``; a
/// test injects a manual clock, and then its `advance` alone fires those timers.
public protocol ProviderClock: Sendable {
    /// The current wall-clock time.
    func now() -> Timestamp
    /// Suspends for `duration` of this clock's time (retry pauses, rate waits,
    /// in the caller's task).
    func sleep(for duration: Duration) async throws
    /// Runs `body` on `loop` once `duration` of this clock's time has passed,
    /// unless the returned timer is cancelled first. The system clock uses the
    /// event loop's timer wheel (no task per timer).
    func scheduleTimer(after duration: Duration, on loop: any EventLoop, _ body: @escaping @Sendable () -> Void) -> ProviderTimer
}

extension ProviderClock {
    /// Runs `body` on `loop` once this clock reads `deadline` or later (at
    /// once, on the loop, when it already does).
    public func scheduleTimer(at deadline: Timestamp, on loop: any EventLoop, _ body: @escaping @Sendable () -> Void) -> ProviderTimer {
        let remaining = max(deadline.timeIntervalSince(now()), 0)
        return scheduleTimer(after: .nanoseconds(Int64(remaining * 1e9)), on: loop, body)
    }
}

/// A pending ``ProviderClock/scheduleTimer(after:on:_:)``; `cancel` stops it if it has not run.
public struct ProviderTimer: Sendable {
    private let onCancel: @Sendable () -> Void
    /// A timer that runs `cancel` when cancelled.
    public init(cancel: @escaping @Sendable () -> Void) { onCancel = cancel }
    /// Stops the timer if it has not run yet.
    public func cancel() { onCancel() }
}

/// The real clock: `CLOCK_REALTIME` for instants, the event loop's timers
/// and `Task.sleep` for waits.
public struct SystemProviderClock: ProviderClock {
    /// The system clock.
    public init() {}
    /// `CLOCK_REALTIME` now.
    public func now() -> Timestamp { .now }
    /// `Task.sleep(for:)`.
    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
    /// A task on `loop`'s timer wheel.
    public func scheduleTimer(after duration: Duration, on loop: any EventLoop, _ body: @escaping @Sendable () -> Void) -> ProviderTimer {
        let scheduled = loop.scheduleTask(in: TimeAmount(duration), body)
        return ProviderTimer { scheduled.cancel() }
    }
}
