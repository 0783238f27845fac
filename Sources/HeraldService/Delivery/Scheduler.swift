public import Logging
import Synchronization

/// A dispatch's global slot. The dispatcher gives it back as soon as its
/// message's route admitted it, so a send waiting on a slow route never holds
/// a slot other routes need; the scheduler gives it back (once) otherwise.
public final class DispatchLease: Sendable {
    private let scheduler: Scheduler?
    private let held = Atomic<Bool>(true)

    init(scheduler: Scheduler?) { self.scheduler = scheduler }

    /// A lease that frees nothing (direct calls, tests).
    public static let none = DispatchLease(scheduler: nil)

    /// Frees the slot; later calls do nothing.
    public func release() async {
        guard let scheduler, held.exchange(false, ordering: .acquiringAndReleasing) else { return }
        await scheduler.releaseSlot()
    }
}

/// Decides when each accepted message's next action runs: keeps the due
/// index, wakes at the earliest due time (or when an earlier message
/// arrives), and hands due message ids to the dispatcher with bounded
/// concurrency.
public actor Scheduler {
    private var index = DueIndex()
    private let clock: any HeraldClock
    private let maxInFlight: Int
    private let logger: Logger

    private var waiter: CheckedContinuation<Void, Never>?
    private var waitingUntil: Int64 = .max
    private var timer: Task<Void, Never>?
    private var inFlight = 0
    private var slotWaiters: [CheckedContinuation<Void, Never>] = []

    public init(clock: any HeraldClock, maxInFlight: Int = 512, logger: Logger) {
        self.clock = clock
        self.maxInFlight = maxInFlight
        self.logger = logger
    }

    /// How many messages wait for an action.
    public var pendingCount: Int { index.count }

    /// The earliest due time in the index.
    public func earliestDue() -> Int64? { index.peekDueAt() }

    /// Schedules (or reschedules) `id` at `dueAt`.
    public func schedule(id: String, dueAt: Int64) {
        index.insert(id: id, dueAt: dueAt)
        if dueAt < waitingUntil { wake() }
    }

    /// Drops `id` (cancelled, superseded).
    public func unschedule(id: String) {
        index.remove(id: id)
    }

    /// Loads many entries at once (the rebuild at start).
    public func load(_ entries: [(id: String, dueAt: Int64)]) {
        index.reserve(index.count + entries.count)
        for entry in entries { index.insert(id: entry.id, dueAt: entry.dueAt) }
        wake()
    }

    /// Runs until the task is cancelled, calling `dispatch` for every due id.
    /// On cancellation it stops taking new work and waits for the
    /// dispatches in flight, which are not cancelled.
    public func run(dispatch: @escaping @Sendable (String) async -> Void) async {
        await run { id, _ in await dispatch(id) }
    }

    /// The same, handing each dispatch its lease to give back early.
    public func run(dispatch: @escaping @Sendable (String, DispatchLease) async -> Void) async {
        await withDiscardingTaskGroup { group in
            while !Task.isCancelled {
                let due = index.popDue(now: clock.now(), limit: 256)
                if due.isEmpty {
                    await waitForWork()
                    continue
                }
                for id in due {
                    await acquireSlot()
                    if Task.isCancelled {
                        // Not dispatched: keep it due for the next start.
                        index.insert(id: id, dueAt: clock.now())
                        releaseSlot()
                        continue
                    }
                    let lease = DispatchLease(scheduler: self)
                    group.addTask {
                        // Unstructured: stopping the scheduler must not cancel
                        // a push in flight (that would withdraw it from APNs
                        // and fail the message); it finishes on its own.
                        await Task { await dispatch(id, lease) }.value
                        await lease.release()
                    }
                }
            }
        }
    }

    private func waitForWork() async {
        let until = index.peekDueAt() ?? .max
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                if Task.isCancelled {
                    continuation.resume()
                    return
                }
                waiter = continuation
                waitingUntil = until
                if until != .max {
                    let clock = self.clock
                    timer = Task { [weak self] in
                        do { try await clock.sleep(until: until) } catch { return }
                        await self?.wake()
                    }
                }
            }
        } onCancel: {
            Task { await self.wake() }
        }
    }

    private func wake() {
        timer?.cancel()
        timer = nil
        waitingUntil = .max
        waiter?.resume()
        waiter = nil
    }

    private func acquireSlot() async {
        if inFlight < maxInFlight {
            inFlight += 1
            return
        }
        await withCheckedContinuation { slotWaiters.append($0) }
    }

    fileprivate func releaseSlot() {
        if slotWaiters.isEmpty {
            inFlight -= 1
        } else {
            slotWaiters.removeFirst().resume()
        }
    }
}
