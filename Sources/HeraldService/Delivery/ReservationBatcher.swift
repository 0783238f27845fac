import HeraldStorage
import Synchronization

/// Coalesces the cap reservations of pushes sent at once into batches
/// (`PolicyLedger.reserveCountedSends`: one transaction, the users' locks in
/// key order): one batch in flight; those asked for meanwhile are the next.
/// On PostgreSQL one reservation per transaction runs at a few hundred per
/// second, a batch of 100 at thousands (bench/RESULTS.md, "Cap
/// reservations"); a dispatched batch's pushes reserve together this way.
final class ReservationBatcher: Sendable {
    private typealias Waiter = (reservation: CapReservation, answer: CheckedContinuation<CapAnswer, any Error>)

    private struct State {
        var queued: [Waiter] = []
        var writing = false
    }

    /// Most reservations in one batch.
    static let batchLimit = 256

    private let ledger: any PolicyLedger
    private let state = Mutex(State())

    init(ledger: any PolicyLedger) {
        self.ledger = ledger
    }

    /// `reservation`'s answer, reserved with whatever else is asked for
    /// meanwhile.
    func reserve(_ reservation: CapReservation) async throws -> CapAnswer {
        try await withCheckedThrowingContinuation { continuation in
            let leads = state.withLock { state -> Bool in
                state.queued.append((reservation, continuation))
                guard !state.writing else { return false }
                state.writing = true
                return true
            }
            // The first asker starts the writes; it ends when nothing is queued.
            if leads { Task { await self.drain() } }
        }
    }

    private func drain() async {
        while let batch = next() {
            do {
                let answers = try await ledger.reserveCountedSends(batch.map(\.reservation))
                for (waiter, answer) in zip(batch, answers) { waiter.answer.resume(returning: answer) }
            } catch {
                for waiter in batch { waiter.answer.resume(throwing: error) }
            }
        }
    }

    /// The next batch, or nil (and no writer any more) when none is queued.
    private func next() -> [Waiter]? {
        state.withLock { state in
            guard !state.queued.isEmpty else {
                state.writing = false
                return nil
            }
            let count = min(state.queued.count, Self.batchLimit)
            let batch = Array(state.queued.prefix(count))
            state.queued.removeFirst(count)
            return batch
        }
    }
}
