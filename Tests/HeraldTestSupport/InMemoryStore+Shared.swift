public import HeraldStorage

/// The in-memory store as a store shared by replicas, for the polling
/// scheduler's tests: `claimDue` claims what `due` finds; leases are not
/// kept (one process), but every renewal is recorded (`leaseRenewals`).
extension InMemoryStore: SharedDueStore {
    public nonisolated var replicaID: String { "memory" }

    public nonisolated var leaseMilliseconds: Int64 { 3_000 }

    public func claimDue(before: Int64, limit: Int, now: Int64) async throws -> [StoredMessage] {
        var claimed: [StoredMessage] = []
        for message in try await due(before: before, limit: limit) {
            if let message = try await claim(id: message.id, from: message.state, now: now) { claimed.append(message) }
        }
        return claimed
    }

    public func renewLeases(ids: [String], now: Int64) async throws -> Set<String> {
        leaseRenewals.append(ids.sorted())
        var held: Set<String> = []
        for id in ids {
            if try await message(id: id)?.isSending == true { held.insert(id) }
        }
        return held
    }

    public func takeOverExpired(now: Int64) async throws -> InterruptedRecovery {
        InterruptedRecovery(resumed: [], unconfirmedDevices: 0)
    }
}
