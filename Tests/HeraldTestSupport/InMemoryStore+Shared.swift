public import HeraldStorage

/// The in-memory store as a store shared by replicas, for the polling
/// scheduler's tests and the store contract suite: one replica ("memory"),
/// whose claims are leased as PostgreSQL's are (`claim` leases until
/// `now + leaseMilliseconds`, `renewLeases` extends what is still claimed,
/// `takeOverExpired` applies the crash rule to expired claims); every
/// renewal is also recorded (`leaseRenewals`).
extension InMemoryStore: SharedDueStore {
    public nonisolated var replicaID: String { "memory" }

    public nonisolated var leaseMilliseconds: Int64 { 3_000 }

    public func claimDue(
        before: Int64, limit: Int, now: Int64, quota: [String: Int], after: String?
    ) async throws -> [StoredMessage] {
        var claimed: [StoredMessage] = []
        for message in DueTurns.pick(try await due(before: before, limit: .max), limit: limit, quota: quota, after: after) {
            if let message = try await claim(id: message.id, from: message.state, now: now) { claimed.append(message) }
        }
        return claimed
    }

    public func renewLeases(ids: [String], now: Int64) async throws -> Set<String> {
        try checkOpen()
        leaseRenewals.append(ids.sorted())
        var held: Set<String> = []
        for id in ids where leases[id] != nil {
            leases[id] = now + leaseMilliseconds
            held.insert(id)
        }
        return held
    }

    public func takeOverExpired(now: Int64) async throws -> InterruptedRecovery {
        try checkOpen()
        return try await recover(now: now) { message in (leases[message.id] ?? 0) < now }
    }
}
