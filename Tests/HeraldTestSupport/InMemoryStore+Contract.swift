import HeraldCore
public import HeraldStorage
import Synchronization

/// The parts of the real stores' surface the store contract suite and the
/// Schedule RPC use: Schedule through a callback (the one Schedule path),
/// retention, seeding, close.
extension InMemoryStore: CallbackScheduling, FinishedMessagePruning {
    /// Schedule answered through `completion` (on the store's executor). The
    /// returned closure gives the write up: if it has not run yet, nothing
    /// is stored and `completion` gets `StoreError.abandoned`.
    public nonisolated func schedule(
        _ message: StoredMessage, deadline: ContinuousClock.Instant?,
        completion: @escaping @Sendable (Result<ScheduleOutcome, any Error>) -> Void
    ) -> @Sendable () -> Void {
        let call = GiveUp()
        Task {
            let result = await self.write(message, deadline: deadline, unless: call)
            completion(result)
        }
        return { call.set() }
    }

    private func write(_ message: StoredMessage, deadline: ContinuousClock.Instant?, unless call: GiveUp)
        -> Result<ScheduleOutcome, any Error> {
        if call.isSet { return .failure(StoreError.abandoned) }
        return Result { try write(message, deadline: deadline) }
    }

    public nonisolated func devices(
        of message: StoredMessage, _ body: @escaping @Sendable (@escaping @Sendable () -> [Device]) -> Void
    ) {
        Task {
            let devices = (try? await self.devices(bundleID: message.bundleID, platform: message.platform,
                                                   userID: message.userID)) ?? []
            body { devices }
        }
    }

    /// Retention as the real stores do it: finished messages (not SCHEDULED
    /// or HANDED_OFF, not in flight, no revoke owed) last changed before
    /// `cutoff`, oldest first, at most `limit`, with their outcomes and keys.
    public func pruneFinished(before cutoff: Int64, limit: Int) async throws -> PruneBatch {
        try checkOpen()
        let prunable = messages.values
            .filter { message in
                message.state != .scheduled && message.state != .handedOff && message.updatedAt < cutoff
                    && message.sendingSince == nil && revokes[message.id] == nil
            }
            .sorted { ($0.updatedAt, $0.id) < ($1.updatedAt, $1.id) }
            .prefix(limit)
        var outcomes = 0
        for message in prunable {
            messages[message.id] = nil
            outcomes += outcomeLog.removeValue(forKey: message.id)?.count ?? 0
            handOverMarks = handOverMarks.filter { $0.key.messageID != message.id }
            if let key = message.idempotencyKey, keys[Key(bundleID: message.bundleID, key: key)] == message.id {
                keys[Key(bundleID: message.bundleID, key: key)] = nil
            }
        }
        return PruneBatch(messages: prunable.count, outcomes: outcomes)
    }

    /// Seeds messages (and the keys they hold) without last-request-wins
    /// checks, as the real stores' `importMessages`.
    public func importMessages(_ seeded: [StoredMessage]) async throws {
        try checkOpen()
        for message in seeded {
            put(message)
            if let key = message.idempotencyKey { keys[Key(bundleID: message.bundleID, key: key)] = message.id }
        }
    }

    /// Later calls throw `StoreError.closed`, as the real stores'; the
    /// in-memory store cannot be re-opened.
    public func close() async { closed = true }

    /// Succeeds until closed.
    public func probeWrite() async throws {
        try checkOpen()
    }
}

/// Set once, from any thread: a callback Schedule given up.
final class GiveUp: Sendable {
    private let flag = Atomic<Bool>(false)

    func set() { flag.store(true, ordering: .relaxed) }

    var isSet: Bool { flag.load(ordering: .relaxed) }
}
