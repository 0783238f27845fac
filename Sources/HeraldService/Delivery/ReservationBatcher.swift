import HeraldStorage
import Synchronization

/// Coalesces the cap reservations of pushes sent at once into batches
/// (`PolicyLedger.reserveCountedSends`: one transaction, the users' locks in
/// key order): one batch in flight; those asked for meanwhile are the next.
/// On PostgreSQL one reservation per transaction runs at a few hundred per
/// second, a batch of 100 at thousands (bench/RESULTS.md, "Cap
/// reservations"); a dispatched batch's pushes reserve together this way.
///
/// A reservation whose user another replica is reserving for at that moment
/// is answered busy (`reserveCountedSends(_:waitingIfBusy:)`): it goes first
/// into the next batch, and after `busyLimit` busy answers it waits for the
/// user's lock there (no starvation), so one replica's batch never waits
/// for the other's whole transaction over users they share.
final class ReservationBatcher: Sendable {
    private struct Waiter {
        var reservation: CapReservation
        var answer: CheckedContinuation<CapAnswer, any Error>
        /// Busy answers so far.
        var busy = 0
    }

    private struct State {
        var queued: [Waiter] = []
        var writing = false
    }

    /// Most reservations in one batch.
    static let batchLimit = 256

    /// Busy answers a reservation takes before it waits for its user's lock.
    static let busyLimit = 2

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
                state.queued.append(Waiter(reservation: reservation, answer: continuation))
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
                let answers = try await ledger.reserveCountedSends(
                    batch.map(\.reservation), waitingIfBusy: batch.map { $0.busy >= Self.busyLimit })
                var busy: [Waiter] = []
                for (waiter, answer) in zip(batch, answers) {
                    if let answer {
                        waiter.answer.resume(returning: answer)
                    } else {
                        var again = waiter
                        again.busy += 1
                        busy.append(again)
                    }
                }
                if !busy.isEmpty { state.withLock { $0.queued.insert(contentsOf: busy, at: 0) } }
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
