import HeraldCore
import HeraldStorage
import Synchronization

/// Group commit on PostgreSQL: concurrent calls (Schedules, device reads)
/// are run together, up to `maximumBatch` to a statement or transaction and
/// at most `maximumInFlight` batches at once, so many calls share one round
/// trip and one commit (one WAL flush) instead of paying one each. A call
/// waits only while every in-flight slot is busy; alone, it runs at once.
///
/// The deadline rule holds per call: one cancelled, or past its deadline
/// when its batch is formed, is answered `StoreError.abandoned` and written
/// nowhere. When a batch fails, each of its calls runs again on its own
/// (one bad row cannot fail its neighbours). The writer comes with each
/// call (the store passes a view of itself).
final class PostgresBatcher<Item: Sendable, Output: Sendable>: Sendable {

    /// One call waiting for its batch.
    final class Pending: Sendable {
        let item: Item
        let deadline: ContinuousClock.Instant?
        let cancelled = Atomic<Bool>(false)
        let completion: @Sendable (Result<Output, any Error>) -> Void

        init(_ item: Item, _ deadline: ContinuousClock.Instant?,
             _ completion: @escaping @Sendable (Result<Output, any Error>) -> Void) {
            self.item = item
            self.deadline = deadline
            self.completion = completion
        }

        /// The caller gave up: if its batch has not formed yet, it is
        /// answered `StoreError.abandoned` and written nowhere.
        func cancel() { cancelled.store(true, ordering: .releasing) }
    }

    private struct State {
        var queue: [Pending] = []
        var inFlight = 0
    }

    let maximumBatch: Int
    let maximumInFlight: Int
    private let state = Mutex(State())
    /// Called with the queue's length after each call joins it (tests).
    private let queued: (@Sendable (Int) -> Void)?

    init(maximumBatch: Int, maximumInFlight: Int, queued: (@Sendable (Int) -> Void)? = nil) {
        precondition(maximumBatch >= 1 && maximumInFlight >= 1)
        self.maximumBatch = maximumBatch
        self.maximumInFlight = maximumInFlight
        self.queued = queued
    }

    /// Runs `item` in the next batch (`writer`'s), answering its output.
    func run<Writer: BatchWriter>(
        _ item: Item, deadline: ContinuousClock.Instant? = nil, writer: Writer
    ) async throws -> Output where Writer.Item == Item, Writer.Output == Output {
        let box = Mutex<Pending?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let pending = Pending(item, deadline) { continuation.resume(with: $0) }
                box.withLock { $0 = pending }
                if Task.isCancelled { pending.cancel() }
                enqueue(pending, writer)
            }
        } onCancel: {
            box.withLock { $0?.cancel() }
        }
    }

    /// The same without a Task: `completion` gets the output (once, on one
    /// of the store's threads; it must not block). The returned call's
    /// `cancel()` gives it up.
    func submit<Writer: BatchWriter>(
        _ item: Item, deadline: ContinuousClock.Instant?, writer: Writer,
        completion: @escaping @Sendable (Result<Output, any Error>) -> Void
    ) -> Pending where Writer.Item == Item, Writer.Output == Output {
        let pending = Pending(item, deadline, completion)
        enqueue(pending, writer)
        return pending
    }

    private func enqueue<Writer: BatchWriter>(_ pending: Pending, _ writer: Writer)
    where Writer.Item == Item, Writer.Output == Output {
        let (start, length) = state.withLock { state -> (Bool, Int) in
            state.queue.append(pending)
            guard state.inFlight < maximumInFlight else { return (false, state.queue.count) }
            state.inFlight += 1
            return (true, state.queue.count)
        }
        queued?(length)
        if start { Task { await self.drain(writer) } }
    }

    /// Writes batches until the queue is empty, then gives its slot back.
    private func drain<Writer: BatchWriter>(_ writer: Writer) async where Writer.Item == Item, Writer.Output == Output {
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

    private func run<Writer: BatchWriter>(_ batch: [Pending], _ writer: Writer) async
    where Writer.Item == Item, Writer.Output == Output {
        let now = ContinuousClock.now
        var live: [Pending] = []
        live.reserveCapacity(batch.count)
        for pending in batch {
            if pending.cancelled.load(ordering: .acquiring) || pending.deadline.map({ now >= $0 }) == true {
                pending.completion(.failure(StoreError.abandoned))
            } else {
                live.append(pending)
            }
        }
        guard !live.isEmpty else { return }
        if live.count > 1 {
            do {
                let outcomes = try await writer.runBatch(live.map { ($0.item, $0.deadline) })
                precondition(outcomes.count == live.count, "one output per call")
                for (pending, outcome) in zip(live, outcomes) {
                    pending.completion(outcome.map { .success($0) } ?? .failure(StoreError.abandoned))
                }
                return
            } catch {
                // Each on its own below: the error may be one call's.
            }
        }
        await withTaskGroup(of: Void.self) { group in
            for pending in live {
                group.addTask {
                    do {
                        pending.completion(.success(try await writer.runOne(pending.item, deadline: pending.deadline)))
                    } catch {
                        pending.completion(.failure(error))
                    }
                }
            }
        }
    }
}

/// What `PostgresBatcher` runs its batches with.
protocol BatchWriter<Item, Output>: Sendable {
    associatedtype Item: Sendable
    associatedtype Output: Sendable

    /// Runs a batch (one statement or transaction): an output per call,
    /// `nil` for one found past its deadline once the connection was ours
    /// (nothing written for it).
    func runBatch(_ batch: [(item: Item, deadline: ContinuousClock.Instant?)]) async throws -> [Output?]

    /// Runs one call on its own (the deadline rule inside).
    func runOne(_ item: Item, deadline: ContinuousClock.Instant?) async throws -> Output
}
