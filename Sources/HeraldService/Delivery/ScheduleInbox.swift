import Synchronization

/// Scheduler changes handed over from any thread without an `await` (the
/// Schedule RPC's commit callback): kept in arrival order until the
/// scheduler's loop folds them in (`Scheduler.drainInbox`). Tells the caller
/// when the loop must be woken: only for a due time before the one it sleeps
/// until, so a burst of far-future Schedules costs the loop nothing.
final class ScheduleInbox: Sendable {
    enum Change: Sendable {
        case schedule(id: String, dueAt: Int64, slot: DueSlot)
        case unschedule(id: String)
    }

    private let changes = Mutex<[Change]>([])
    /// The due time the scheduler's loop sleeps until (`.max` while it runs:
    /// then every change asks for a wake-up, which only sets a flag).
    private let sleepsUntil = Atomic<Int64>(.max)

    /// Queues `change`; true when the scheduler must be woken for it.
    func append(_ change: Change) -> Bool {
        changes.withLock { $0.append(change) }
        guard case .schedule(_, let dueAt, _) = change else { return false }
        return dueAt < sleepsUntil.load(ordering: .acquiring)
    }

    /// Everything queued, oldest first, and empties the inbox.
    func take() -> [Change] {
        changes.withLock { changes in
            guard !changes.isEmpty else { return [] }
            defer { changes = [] }
            return changes
        }
    }

    func setSleepsUntil(_ instant: Int64) {
        sleepsUntil.store(instant, ordering: .releasing)
    }
}
