public import ProviderHTTP2
public import HeraldPrimitives
public import NIOCore
import Synchronization

/// The provider clients' clock (APNs and FCM), moved by the test: sleepers
/// (retry pauses, rate waits) and timers (response timeouts, request
/// deadlines, reconnect backoff, keep-alive, token refresh) wake only
/// when it passes them, never by themselves, however long the test takes.
/// With `autoAdvance`, `sleep` moves time forward at once instead (and fires
/// the timers that passes).
public final class ManualProviderClock: ProviderClock, Sendable {
    private struct Timer {
        var id: Int
        var fire: Timestamp
        var loop: any EventLoop
        var body: @Sendable () -> Void
    }

    private struct State {
        var now: Timestamp
        /// Every duration slept so far.
        var sleeps: [Duration] = []
        var sleepers: [(wake: Timestamp, continuation: CheckedContinuation<Void, Never>)] = []
        var timers: [Timer] = []
        var nextTimer = 0
        /// Sleeps not yet returned by `nextSleep`.
        var unclaimedSleeps: [Duration] = []
        /// Sleeps and live timers not yet returned by `nextWait` (timer id or nil).
        var unclaimedWaits: [(duration: Duration, timer: Int?)] = []
        var waiters: [(ready: @Sendable (inout State) -> Bool, continuation: CheckedContinuation<Void, Never>)] = []

        /// Removes the waiters whose condition now holds, to resume outside the lock.
        mutating func readyWaiters() -> [CheckedContinuation<Void, Never>] {
            var ready: [CheckedContinuation<Void, Never>] = []
            var index = 0
            while index < waiters.count {
                if waiters[index].ready(&self) {
                    ready.append(waiters.remove(at: index).continuation)
                } else {
                    index += 1
                }
            }
            return ready
        }

        /// Removes the timers due now, to run outside the lock.
        mutating func dueTimers() -> [Timer] {
            let now = self.now
            let due = timers.filter { $0.fire <= now }
            timers.removeAll { $0.fire <= now }
            return due
        }
    }

    private let state: Mutex<State>
    public let autoAdvance: Bool

    public init(start: Timestamp = .now, autoAdvance: Bool = false) {
        state = Mutex(State(now: start))
        self.autoAdvance = autoAdvance
    }

    public func now() -> Timestamp { state.withLock { $0.now } }

    /// Every duration slept so far.
    public var sleeps: [Duration] { state.withLock { $0.sleeps } }

    /// Timers armed and neither fired nor cancelled.
    public var pendingTimers: Int { state.withLock { $0.timers.count } }

    public func sleep(for duration: Duration) async throws {
        if autoAdvance {
            let (due, ready) = state.withLock { state in
                state.sleeps.append(duration)
                state.now = state.now.addingTimeInterval(duration.timeInterval)
                return (state.dueTimers(), state.readyWaiters())
            }
            for timer in due { timer.loop.execute(timer.body) }
            for waiter in ready { waiter.resume() }
            return
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                state.sleeps.append(duration)
                state.sleepers.append((state.now.addingTimeInterval(duration.timeInterval), continuation))
                state.unclaimedSleeps.append(duration)
                state.unclaimedWaits.append((duration, nil))
                return state.readyWaiters()
            }
            for waiter in ready { waiter.resume() }
        }
    }

    public func scheduleTimer(
        after duration: Duration, on loop: any EventLoop, _ body: @escaping @Sendable () -> Void
    ) -> ProviderTimer {
        let (id, ready) = state.withLock { state in
            state.nextTimer += 1
            let id = state.nextTimer
            state.timers.append(Timer(id: id, fire: state.now.addingTimeInterval(duration.timeInterval), loop: loop, body: body))
            state.unclaimedWaits.append((duration, id))
            return (id, state.readyWaiters())
        }
        for waiter in ready { waiter.resume() }
        return ProviderTimer { [self] in
            state.withLock { state in
                state.timers.removeAll { $0.id == id }
                state.unclaimedWaits.removeAll { $0.timer == id }
            }
        }
    }

    /// Moves time forward: runs the timers and wakes the sleepers now due.
    public func advance(by duration: Duration) {
        let (sleepers, timers) = state.withLock { state in
            state.now = state.now.addingTimeInterval(duration.timeInterval)
            let now = state.now
            let sleepers = state.sleepers.filter { $0.wake <= now }.map(\.continuation)
            state.sleepers.removeAll { $0.wake <= now }
            return (sleepers, state.dueTimers())
        }
        for timer in timers { timer.loop.execute(timer.body) }
        for sleeper in sleepers { sleeper.resume() }
    }

    /// Returns once at least `count` timers are pending.
    public func waitForTimers(_ count: Int) async { await waitUntil { $0.timers.count >= count } }

    /// Returns once at least `count` tasks sleep on this clock.
    public func waitForSleepers(_ count: Int) async { await waitUntil { $0.sleepers.count >= count } }

    /// Waits until something sleeps on this clock; returns the duration asked for.
    public func nextSleep() async -> Duration {
        let claimed = Mutex<Duration?>(nil)
        await waitUntil { state in
            guard !state.unclaimedSleeps.isEmpty else { return false }
            let duration = state.unclaimedSleeps.removeFirst()
            claimed.withLock { $0 = duration }
            return true
        }
        return claimed.withLock { $0! }
    }

    /// Waits until something sleeps or arms a timer on this clock (timers
    /// cancelled before they are claimed do not count); returns its duration.
    public func nextWait() async -> Duration {
        let claimed = Mutex<Duration?>(nil)
        await waitUntil { state in
            guard !state.unclaimedWaits.isEmpty else { return false }
            let wait = state.unclaimedWaits.removeFirst()
            claimed.withLock { $0 = wait.duration }
            return true
        }
        return claimed.withLock { $0! }
    }

    private func waitUntil(_ ready: @escaping @Sendable (inout State) -> Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state in
                if ready(&state) { return true }
                state.waiters.append((ready, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }
}

/// The APNs tests' name for the one manual clock.
public typealias ManualAPNsClock = ManualProviderClock

/// The FCM tests' name for the one manual clock.
public typealias ManualFCMClock = ManualProviderClock
