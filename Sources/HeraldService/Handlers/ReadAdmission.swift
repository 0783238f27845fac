import GRPCEngine
import Synchronization

/// The read side's concurrency bound (SPEC §7 "Added 2026-11-27"): at most
/// `maxConcurrent` GetMessage, ListMessages and CampaignReport calls run at
/// once, at most `maxQueued` wait for a place (first come, first served),
/// and any beyond that is RESOURCE_EXHAUSTED at once, naming the settings.
///
/// Why: each read-side call used to run at once, on its own Task: hundreds
/// of concurrent CampaignReports took every reader (SQLite) or every pooled
/// connection (PostgreSQL) that Schedule, claims and lease renewal need.
/// The store gives the read side its own bounded capacity (SQLite: as many
/// reader threads, PostgreSQL: as many connections of a pool of its own) and
/// this gate keeps the calls waiting for it bounded too.
///
/// A waiting call leaves its place when its task is cancelled (deadline,
/// RST_STREAM, connection loss), so a wait never outlives its caller.
final class ReadAdmission: Sendable {
    /// Calls reading at once.
    let maxConcurrent: Int
    /// Calls waiting for one of those places.
    let maxQueued: Int

    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var running = 0
        var waiters: [Waiter] = []
        var head = 0
        var nextID: UInt64 = 0
        var waiting: Int { waiters.count - head }
    }

    private let state = Mutex(State())

    init(maxConcurrent: Int, maxQueued: Int) {
        self.maxConcurrent = max(1, maxConcurrent)
        self.maxQueued = max(0, maxQueued)
    }

    /// Calls running and waiting now (tests, metrics).
    var counts: (running: Int, waiting: Int) { state.withLock { ($0.running, $0.waiting) } }

    /// The answer past the bound.
    var exhausted: GRPCStatus {
        GRPCStatus(.resourceExhausted, """
            too many read-side calls (GetMessage, ListMessages, CampaignReport): \(maxConcurrent) running and \
            \(maxQueued) waiting (--max-concurrent-reads, --max-queued-reads); retry later
            """)
    }

    /// Runs `body` once a place is free; RESOURCE_EXHAUSTED when every place
    /// and every waiting slot is taken; `CancellationError` when the task is
    /// cancelled while it waits.
    func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await enter()
        defer { leave() }
        return try await body()
    }

    private enum Entry {
        case admitted
        case cancelled
        case full
    }

    private func enter() async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // One decision under the lock: admitted, refused, or queued
                // (where `leave` finds it).
                let entry: Entry? = self.state.withLock { state in
                    if Task.isCancelled { return .cancelled }
                    if state.running < self.maxConcurrent && state.waiting == 0 {
                        state.running += 1
                        return .admitted
                    }
                    guard state.waiting < self.maxQueued else { return .full }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return nil
                }
                switch entry {
                case .admitted: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .full: continuation.resume(throwing: self.exhausted)
                case nil: break
                }
            }
        } onCancel: {
            self.cancel(id)
        }
    }

    /// Gives the place to the first waiter, or frees it.
    private func leave() {
        let next: CheckedContinuation<Void, any Error>? = state.withLock { state in
            guard state.waiting > 0 else {
                state.running -= 1
                return nil
            }
            let waiter = state.waiters[state.head]
            state.head += 1
            Self.compact(&state)
            return waiter.continuation
        }
        next?.resume()
    }

    /// A cancelled waiter leaves the queue (if it is still in it: a place
    /// handed to it meanwhile is its to give back through `leave`).
    private func cancel(_ id: UInt64) {
        let continuation: CheckedContinuation<Void, any Error>? = state.withLock { state in
            guard let index = state.waiters[state.head...].firstIndex(where: { $0.id == id }) else { return nil }
            let waiter = state.waiters.remove(at: index)
            Self.compact(&state)
            return waiter.continuation
        }
        continuation?.resume(throwing: CancellationError())
    }

    private static func compact(_ state: inout State) {
        if state.head > 64 && state.head * 2 > state.waiters.count {
            state.waiters.removeFirst(state.head)
            state.head = 0
        }
    }
}
