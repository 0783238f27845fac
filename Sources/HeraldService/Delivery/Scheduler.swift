public import HeraldStorage
public import Logging
import Synchronization

/// A dispatch's global slot. The dispatcher gives it back as soon as its
/// message's route admitted it, so a send waiting on a slow route never holds
/// a slot other routes need; the scheduler gives it back (once) otherwise.
/// Giving it back is a lock, not a hop onto the scheduler's actor: the push
/// carries on on its own thread.
public final class DispatchLease: Sendable {
    private let slots: DispatchSlots?
    private let held = Atomic<Bool>(true)
    private let open = Atomic<Bool>(true)
    private let onFinish: (@Sendable () -> Void)?

    init(slots: DispatchSlots?, onFinish: (@Sendable () -> Void)? = nil) {
        self.slots = slots
        self.onFinish = onFinish
    }

    /// A lease that frees nothing (direct calls, tests).
    public static let none = DispatchLease(slots: nil)

    /// Frees the slot; later calls do nothing.
    public func release() {
        guard let slots, held.exchange(false, ordering: .acquiringAndReleasing) else { return }
        slots.release()
    }

    /// The message's dispatch has returned: frees the slot if still held
    /// and tells the scheduler (a polled claim is no longer renewed); later
    /// calls do nothing.
    public func finish() {
        release()
        guard open.exchange(false, ordering: .acquiringAndReleasing) else { return }
        onFinish?()
    }
}

/// The scheduler's global dispatch slots: taken by its loop (the only one
/// that waits for one), given back by leases from any thread.
///
/// When all are taken, the loop waits for a batch's worth (`refill`) to
/// come free, or for `relax()` (a few milliseconds later), whichever comes
/// first: while a slow route's waiters hold the slots they come free one at
/// a time, and a loop woken by each would claim, read devices and write
/// one message per transaction (bench/RESULTS.md, "Session 47").
final class DispatchSlots: Sendable {
    private struct State {
        var inFlight = 0
        var waiter: CheckedContinuation<Void, Never>?
        /// Free slots the waiter waits for.
        var needed = 1
    }

    let limit: Int
    private let state = Mutex(State())
    /// Signalled when a slot frees while all were taken and the loop is not
    /// waiting for one (polling: a poll claims only as many as are free).
    private let freed: WakeSignal?

    init(limit: Int, freed: WakeSignal?) {
        self.limit = limit
        self.freed = freed
    }

    /// Slots taken now.
    var inFlight: Int { state.withLock { $0.inFlight } }

    /// Slots free now.
    var free: Int { state.withLock { max(0, limit - $0.inFlight) } }

    /// Whether the loop waits for slots (tests).
    var waiting: Bool { state.withLock { $0.waiter != nil } }

    /// Takes one slot if one is free.
    func tryAcquire() -> Bool {
        state.withLock { state in
            guard state.inFlight < limit else { return false }
            state.inFlight += 1
            return true
        }
    }

    /// Takes one slot once `refill` are free (at most `limit`) or one is
    /// and `relax()` was called (one caller at a time).
    func acquire(refill: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                state.needed = min(max(1, refill), limit)
                if limit - state.inFlight >= state.needed {
                    state.inFlight += 1
                    return true
                }
                precondition(state.waiter == nil, "one slot waiter at a time")
                state.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// The waiter takes a single free slot from now on.
    func relax() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.needed = 1
            guard state.inFlight < limit, let waiter = state.waiter else { return nil }
            state.waiter = nil
            state.inFlight += 1
            return waiter
        }
        waiter?.resume()
    }

    /// Takes `count` more slots (counted free by the caller before).
    func take(_ count: Int) {
        state.withLock { $0.inFlight += count }
    }

    /// Gives one slot back: to the waiting loop (it stays taken) when
    /// enough are free, or free.
    func release() {
        let (waiter, wasFull) = state.withLock { state -> (CheckedContinuation<Void, Never>?, Bool) in
            let wasFull = state.inFlight == limit
            state.inFlight -= 1
            if let waiter = state.waiter, limit - state.inFlight >= state.needed {
                state.waiter = nil
                state.inFlight += 1
                return (waiter, false)
            }
            return (nil, wasFull && state.waiter == nil)
        }
        waiter?.resume()
        if wasFull { freed?.signal() }
    }
}

/// Decides when each accepted message's next action runs: keeps the due
/// index, wakes at the earliest due time (or when an earlier message
/// arrives), and hands due message ids to the dispatcher with bounded
/// concurrency.
///
/// With a store shared by replicas (`SharedDueStore`, PostgreSQL) the due
/// messages are in the database instead: the index stays empty, `run(claimed:)`
/// polls the store and claims batches (Scheduler+Polling.swift), and
/// `schedule` only wakes the poll sooner.
///
/// Its dispatches are children of `run()`'s task group (no detached task):
/// `stop()` ends the loop without cancelling them, so a push in flight is
/// never withdrawn from its provider; `run()` returns once they have finished.
public actor Scheduler {
    private var index = DueIndex()
    let clock: any HeraldClock
    let maxInFlight: Int
    let logger: Logger
    /// The shared store polled for due messages; nil: the due index.
    public nonisolated let shared: (any SharedDueStore)?
    /// How often the shared store is polled at most.
    let pollMilliseconds: Int64
    /// The due times scheduled here that no poll has covered yet (polling).
    var hints = DueHints()
    /// Most messages the next poll claims: halved after a poll whose
    /// messages were deferred (a saturated route gives them back, so claiming
    /// more would only churn), doubled back up to `pollBatch` otherwise.
    var pollLimit = Scheduler.pollBatch
    /// Whether a message was deferred since the last poll.
    var deferred = false

    /// Each bundle's `max-per-second` (its delivery policy; read before
    /// each batch, so SIGHUP applies), and where the throttled pops' waits go.
    var throttle = SchedulerThrottle()
    private var rates: [String: Int] = [:]
    /// Polling: each throttled bundle's shared slots as last seen.
    var sharedThrottle = SharedThrottle()

    /// Wakes the loop: a new earlier due time, a load, `stop()`.
    let wakeups = WakeSignal()
    var waitingUntil: Int64 = .max {
        didSet { inbox.setSleepsUntil(waitingUntil) }
    }
    /// Changes from `enqueue` (any thread), folded in by `drainInbox`.
    nonisolated let inbox = ScheduleInbox()
    var stopped = false
    /// The global dispatch slots (`maxInFlight`).
    let slots: DispatchSlots
    /// The clock sleeps `waitForWork` started that have not rung, by
    /// deadline (see `armAlarm(at:)`); only the run loop arms them, and it
    /// cancels those left when it ends (stopped or cancelled).
    private var alarms: [Int64: Task<Void, Never>] = [:]

    /// A scheduler of the due index, or (`shared`) of a shared store's due
    /// messages, polled every `pollMilliseconds` at most.
    public init(
        clock: any HeraldClock, maxInFlight: Int = 512, logger: Logger, shared: (any SharedDueStore)? = nil,
        pollMilliseconds: Int64 = 250
    ) {
        self.clock = clock
        self.maxInFlight = maxInFlight
        self.logger = logger
        self.shared = shared
        self.pollMilliseconds = pollMilliseconds
        self.slots = DispatchSlots(limit: maxInFlight, freed: shared != nil ? wakeups : nil)
    }

    /// How many messages wait for an action.
    public var pendingCount: Int {
        drainInbox()
        return index.count
    }

    /// The earliest due time in the index.
    public func earliestDue() -> Int64? {
        drainInbox()
        return index.peekDueAt()
    }

    /// `schedule(id:dueAt:)` (after `unschedule(id:)` of `supersededID`)
    /// from any thread, without an `await`: queued for the loop, which is
    /// woken only when the due time is sooner than it planned to wake.
    public nonisolated func enqueue(id: String, dueAt: Int64, slot: DueSlot = DueSlot(), superseding supersededID: String? = nil) {
        if let supersededID { _ = inbox.append(.unschedule(id: supersededID)) }
        if inbox.append(.schedule(id: id, dueAt: dueAt, slot: slot)) { wakeups.signal() }
    }

    /// Applies what `enqueue` queued, in order.
    func drainInbox() {
        for change in inbox.take() {
            switch change {
            // No wake-up: the loop drains only where it is about to look
            // at the index.
            case .schedule(let id, let dueAt, let slot): place(id: id, dueAt: dueAt, slot: slot)
            case .unschedule(let id): index.remove(id: id)
            }
        }
    }

    /// Schedules (or reschedules) `id` at `dueAt`, in `slot`'s lane.
    public func schedule(id: String, dueAt: Int64, slot: DueSlot = DueSlot()) {
        drainInbox()  // what was enqueued before comes first
        place(id: id, dueAt: dueAt, slot: slot)
        if dueAt < waitingUntil { wakeups.signal() }
    }

    /// Puts `id` in the index, or (polling) only notes how soon to poll: it
    /// is stored already and the poll finds it.
    private func place(id: String, dueAt: Int64, slot: DueSlot) {
        if shared != nil {
            hints.note(dueAt)
        } else {
            index.insert(id: id, dueAt: dueAt, slot: slot)
        }
    }

    /// A dispatch gave its claim back (its route is saturated): the next
    /// polls claim fewer (polling only).
    public func noteDeferred() {
        deferred = true
    }

    /// Pauses `lane` until `until` (a saturated route turned one of its
    /// messages away; the due index only: polling claims fewer instead,
    /// `noteDeferred()`). Nothing of the lane is handed out before then,
    /// or before `resume(lanes:)`.
    public func pause(lane: String, until: Int64) {
        drainInbox()
        index.pause(lane: lane, until: until)
    }

    /// Ends these lanes' pauses now (their route answered again).
    public func resume(lanes: [String]) {
        drainInbox()
        let now = clock.now()
        for lane in lanes { index.resume(lane: lane, now: now) }
        wakeups.signal()
    }

    /// Drops `id` (cancelled, superseded).
    public func unschedule(id: String) {
        drainInbox()  // a Cancel must not be overtaken by the Schedule it cancels
        index.remove(id: id)
    }

    /// Loads many entries at once (the rebuild at start).
    public func load(_ entries: [(id: String, dueAt: Int64, slot: DueSlot)]) {
        index.reserve(index.count + entries.count)
        for entry in entries { index.insert(id: entry.id, dueAt: entry.dueAt, slot: entry.slot) }
        wakeups.signal()
    }

    /// Stops taking work: `run()` dispatches nothing more and returns once
    /// the dispatches in flight have finished (they are not cancelled).
    public func stop() {
        stopped = true
        wakeups.signal()
    }

    /// Most due messages handed to one batch dispatch.
    static let dueBatch = 256

    /// Runs until `stop()` (or until the task is cancelled, which cancels the
    /// dispatches in flight too), calling `dispatch` for every due id.
    public func run(dispatch: @escaping @Sendable (String) async -> Void) async {
        await run { id, _ in await dispatch(id) }
    }

    /// The same, handing each dispatch its lease to give back early.
    public func run(dispatch: @escaping @Sendable (String, DispatchLease) async -> Void) async {
        await run(batches: Self.oneByOne(dispatch))
    }

    /// A batch dispatch running `dispatch` for every item at once, each
    /// lease finished when its item's dispatch returns.
    static func oneByOne<Item: Sendable>(
        _ dispatch: @escaping @Sendable (Item, DispatchLease) async -> Void
    ) -> @Sendable ([Item], [DispatchLease]) async -> Void {
        { items, leases in
            await withDiscardingTaskGroup { group in
                for (item, lease) in zip(items, leases) {
                    group.addTask {
                        await dispatch(item, lease)
                        lease.finish()
                    }
                }
            }
        }
    }

    /// The same, a due batch at a time: every due id that has a free slot
    /// (up to `dueBatch`) goes to one `dispatch` call with its own lease,
    /// to give back once that message no longer needs the slot.
    public func run(batches dispatch: @escaping @Sendable ([String], [DispatchLease]) async -> Void) async {
        await withDiscardingTaskGroup { group in
            while !stopped && !Task.isCancelled {
                drainInbox()
                guard let first = index.peekDueAt(), first <= clock.now() else {
                    await waitForWork()
                    continue
                }
                if !slots.tryAcquire() { await acquireBatchOfSlots() }
                // The free slots are taken at once: one batch for all that is due and may run.
                let more = min(slots.free, Self.dueBatch - 1)
                applyRates()
                let due = stopped || Task.isCancelled ? [] : index.popDue(now: clock.now(), limit: 1 + more)
                let waits = index.takeThrottleWaits()
                if !waits.isEmpty { throttle.waited(waits) }
                guard !due.isEmpty else {
                    slots.release()  // stopped (what is due stays due for the next start), or unscheduled meanwhile
                    continue
                }
                slots.take(due.count - 1)
                let leases = due.map { _ in DispatchLease(slots: slots) }
                group.addTask {
                    await dispatch(due, leases)
                    for lease in leases { lease.finish() }
                }
            }
            cancelAlarms()
        }
    }

    /// Takes a slot when none is free: once a batch's worth is
    /// (`maxInFlight / 16`), or `refillMilliseconds` after the wait began
    /// once one is ("DispatchSlots").
    private func acquireBatchOfSlots() async {
        let (slots, clock) = (slots, clock)
        let deadline = clock.now() + Self.refillMilliseconds
        let relax = Task {
            do {
                try await clock.sleep(until: deadline)
                slots.relax()
            } catch {}  // cancelled: the slots came free first
        }
        await slots.acquire(refill: maxInFlight / 16)
        relax.cancel()
    }

    /// Longest the loop waits for a batch's worth of slots once one is free.
    static let refillMilliseconds: Int64 = 10

    /// Returns at the earliest due time (or sooner: the loop looks again),
    /// at a wake-up, or when cancelled.
    private func waitForWork() async {
        drainInbox()
        let until = index.peekDueAt() ?? .max
        waitingUntil = until
        defer {
            waitingUntil = .max
            drainInbox()
        }
        if until != .max { armAlarm(at: until) }
        await wakeups.wait()
    }

    /// Makes sure the loop is woken by `until`: a clock sleep starts only
    /// when none pending ends by then, and is not cancelled when the loop
    /// wakes sooner (only when it stops). A cancelled `Task.sleep` keeps its
    /// timer, and the sleep's task, in the runtime until its deadline: the
    /// wait that raced a sleep against every wake-up left one of each per
    /// Schedule while a million held messages waited for one instant, all
    /// firing at that instant (bench/RESULTS.md, "Session 43"). A sleep
    /// that rings for a due time no longer in the index only makes the loop
    /// look again.
    private func armAlarm(at until: Int64) {
        guard !alarms.keys.contains(where: { $0 <= until }) else { return }
        if alarms.count >= Self.alarmLimit, let latest = alarms.keys.max() {
            alarms.removeValue(forKey: latest)?.cancel()  // bounded: due times that keep moving earlier
        }
        let (clock, wakeups) = (clock, wakeups)
        alarms[until] = Task { [weak self] in
            try? await clock.sleep(until: until)
            await self?.alarmRang(at: until)
            wakeups.signal()
        }
    }

    private func alarmRang(at until: Int64) {
        alarms.removeValue(forKey: until)
    }

    private func cancelAlarms() {
        for alarm in alarms.values { alarm.cancel() }
        alarms = [:]
    }

    /// Most clock sleeps `armAlarm` keeps pending at once.
    static let alarmLimit = 16

    /// Clock sleeps started for the due index's waits and not rung (tests).
    var pendingAlarms: Int { alarms.count }

    /// Returns at `until`, at a wake-up, or when cancelled: the clock's
    /// sleep and the wake-up race as children of one group. For the poll
    /// (`until` at most a poll period ahead, so a sleep cancelled by a
    /// wake-up keeps its timer that long at most); the due index's waits,
    /// which may reach hours ahead, use `armAlarm(at:)`.
    func sleepOrWake(until: Int64) async {
        let (clock, wakeups) = (clock, wakeups)
        await withTaskGroup(of: Void.self) { race in
            race.addTask { try? await clock.sleep(until: until) }
            race.addTask { await wakeups.wait() }
            await race.next()
            race.cancelAll()
        }
    }

    /// Sets the throttle (before `run`).
    public func setThrottle(_ throttle: SchedulerThrottle) {
        self.throttle = throttle
    }

    private func applyRates() {
        let current = throttle.rates()
        guard current != rates else { return }
        rates = current
        index.setRates(current)
    }

}

/// A one-slot wake-up: `signal()` resumes the one waiter, or is kept for the
/// next `wait()`; a cancelled `wait()` returns at once.
final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.pending || Task.isCancelled {
                        state.pending = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            signal()
        }
    }
}

/// The scheduler's per-bundle throttle (SPEC §4b `max-per-second`): the
/// rates by bundle, read before each batch, an observer of how long each
/// throttled push waited past its due time (`herald_throttle_wait_seconds`),
/// and, polling a shared store, the ledger whose slots every replica books
/// (nil: booked in this process alone).
public struct SchedulerThrottle: Sendable {
    public var rates: @Sendable () -> [String: Int]
    public var waited: @Sendable ([Int64]) -> Void
    public var ledger: (any PolicyLedger)?

    public init(
        rates: @escaping @Sendable () -> [String: Int] = { [:] }, waited: @escaping @Sendable ([Int64]) -> Void = { _ in },
        ledger: (any PolicyLedger)? = nil
    ) {
        self.rates = rates
        self.waited = waited
        self.ledger = ledger
    }
}
