import HeraldCore
import HeraldStorage
import Synchronization

/// Group commit for Schedule on PostgreSQL: concurrent Schedules are
/// written together, up to `maximumBatch` to a transaction and at most
/// `maximumInFlight` transactions at once, so many Schedules share one
/// commit (one WAL flush) instead of paying one each. A Schedule waits only
/// while every in-flight slot is busy; alone, it is written at once.
///
/// The deadline rule holds per Schedule: one cancelled, or past its deadline
/// when its batch is formed, is answered `StoreError.abandoned` and written
/// nowhere. When a batch's transaction fails, each of its Schedules is
/// written again on its own (one bad row cannot fail its neighbours).
/// The writer comes with each call (the store passes itself).
final class PostgresScheduleBatcher: Sendable {

    /// One Schedule waiting for its batch.
    final class Pending: Sendable {
        let message: StoredMessage
        let deadline: ContinuousClock.Instant?
        let cancelled = Atomic<Bool>(false)
        let continuation: CheckedContinuation<ScheduleOutcome, any Error>

        init(_ message: StoredMessage, _ deadline: ContinuousClock.Instant?,
             _ continuation: CheckedContinuation<ScheduleOutcome, any Error>) {
            self.message = message
            self.deadline = deadline
            self.continuation = continuation
        }
    }

    private struct State {
        var queue: [Pending] = []
        var inFlight = 0
    }

    let maximumBatch: Int
    let maximumInFlight: Int
    private let state = Mutex(State())
    /// Called with the queue's length after each Schedule joins it (tests).
    private let queued: (@Sendable (Int) -> Void)?

    init(maximumBatch: Int, maximumInFlight: Int, queued: (@Sendable (Int) -> Void)? = nil) {
        precondition(maximumBatch >= 1 && maximumInFlight >= 1)
        self.maximumBatch = maximumBatch
        self.maximumInFlight = maximumInFlight
        self.queued = queued
    }

    func schedule(
        _ message: StoredMessage, deadline: ContinuousClock.Instant?, writer: some ScheduleBatchWriter
    ) async throws -> ScheduleOutcome {
        let box = Mutex<Pending?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let pending = Pending(message, deadline, continuation)
                box.withLock { $0 = pending }
                if Task.isCancelled { pending.cancelled.store(true, ordering: .releasing) }
                let (start, length) = state.withLock { state -> (Bool, Int) in
                    state.queue.append(pending)
                    guard state.inFlight < maximumInFlight else { return (false, state.queue.count) }
                    state.inFlight += 1
                    return (true, state.queue.count)
                }
                queued?(length)
                if start { Task { await self.drain(writer) } }
            }
        } onCancel: {
            box.withLock { $0?.cancelled.store(true, ordering: .releasing) }
        }
    }

    /// Writes batches until the queue is empty, then gives its slot back.
    private func drain(_ writer: some ScheduleBatchWriter) async {
        while true {
            let batch = state.withLock { state -> [Pending]? in
                guard !state.queue.isEmpty else {
                    state.inFlight -= 1
                    return nil
                }
                let count = min(maximumBatch, state.queue.count)
                let batch = Array(state.queue.prefix(count))
                state.queue.removeFirst(count)
                return batch
            }
            guard let batch else { return }
            await run(batch, writer)
        }
    }

    private func run(_ batch: [Pending], _ writer: some ScheduleBatchWriter) async {
        let now = ContinuousClock.now
        var live: [Pending] = []
        live.reserveCapacity(batch.count)
        for pending in batch {
            if pending.cancelled.load(ordering: .acquiring) || pending.deadline.map({ now >= $0 }) == true {
                pending.continuation.resume(throwing: StoreError.abandoned)
            } else {
                live.append(pending)
            }
        }
        guard !live.isEmpty else { return }
        if live.count > 1 {
            do {
                let outcomes = try await writer.scheduleBatch(live.map { ($0.message, $0.deadline) })
                precondition(outcomes.count == live.count, "one outcome per Schedule")
                for (pending, outcome) in zip(live, outcomes) {
                    if let outcome {
                        pending.continuation.resume(returning: outcome)
                    } else {
                        pending.continuation.resume(throwing: StoreError.abandoned)
                    }
                }
                return
            } catch {
                // Each on its own below: the error may be one Schedule's.
            }
        }
        await withTaskGroup(of: Void.self) { group in
            for pending in live {
                group.addTask {
                    do {
                        pending.continuation.resume(returning: try await writer.scheduleOne(pending.message, deadline: pending.deadline))
                    } catch {
                        pending.continuation.resume(throwing: error)
                    }
                }
            }
        }
    }
}

/// What `PostgresScheduleBatcher` writes with.
protocol ScheduleBatchWriter: Sendable {
    /// Writes a batch in one transaction: an outcome per Schedule, `nil` for
    /// one found past its deadline once the connection was ours (not written).
    func scheduleBatch(
        _ batch: [(message: StoredMessage, deadline: ContinuousClock.Instant?)]
    ) async throws -> [ScheduleOutcome?]

    /// Writes one Schedule in its own transaction (the deadline rule inside).
    func scheduleOne(_ message: StoredMessage, deadline: ContinuousClock.Instant?) async throws -> ScheduleOutcome
}
