import HeraldCore
import Testing
@testable import HeraldStorage

/// Claims and their leases on the stores shared by replicas
/// (`StoreKind.shared`: PostgreSQL, and the in-memory store standing in for
/// it in the polling scheduler's tests), one replica each: `claimDue` leases
/// what it claims, a renewal holds a claim past its first lease, a claim
/// not renewed expires and is taken over by the crash rule, and the
/// taken-over message is claimed again, continuing its push. SQLite's claims
/// are its one process's (`StoreKind.sharesDue`); several PostgreSQL
/// replicas at once are PostgresLeaseTests'.
@Suite("Store contract: claims and leases", .storeCaseLimit)
struct LeaseContractTests {
    /// `withStore` with the store as a `SharedDueStore`.
    func withSharedStore(_ kind: StoreKind, _ body: (any SharedDueStore) async throws -> Void) async throws {
        try await withStore(kind) { store in
            let shared = try #require(store as? any SharedDueStore, "\(kind) claims for replicas")
            try await body(shared)
        }
    }

    @Test(arguments: StoreKind.shared) func aRenewedLeaseHoldsAndAnEndedPushIsNoLongerHeld(_ kind: StoreKind) async throws {
        try await withSharedStore(kind) { store in
            let lease = store.leaseMilliseconds
            let first = makeMessage(id: "m1", key: "k1", dueAt: now)
            let second = makeMessage(id: "m2", key: "k2", dueAt: now + 1)
            let later = makeMessage(id: "m3", key: "k3", dueAt: now + 10 * lease)
            for message in [later, second, first] { _ = try await store.schedule(message) }
            // Hostile first: a claim in flight is never claimed twice.
            #expect(try await store.claimDue(before: now + 1, limit: 10, now: now).map(\.id) == ["m1", "m2"])
            #expect(try await store.claimDue(before: now + 1, limit: 10, now: now).isEmpty)
            #expect(try await store.renewLeases(ids: ["m1", "m2", "unknown", "m3"], now: now + lease / 2) == ["m1", "m2"])
            #expect(try await store.transition(id: "m2", from: .scheduled, to: .sent, dueAt: nil, providerMessageID: "x", lastError: nil,
                                               now: now + lease / 2 + 1))
            #expect(try await store.renewLeases(ids: ["m2"], now: now + lease / 2 + 2).isEmpty)  // its push ended
            // m1's renewal holds past its first lease, up to its own last millisecond.
            #expect(try await store.takeOverExpired(now: now + lease + 1).resumed.isEmpty)
            #expect(try await store.takeOverExpired(now: now + lease / 2 + lease).resumed.isEmpty)
            #expect(try await store.takeOverExpired(now: now + lease / 2 + lease + 1).resumed == ["m1"])
            #expect(try await store.message(id: "m3")?.isSending == false)
        }
    }

    @Test(arguments: StoreKind.shared) func anExpiredClaimIsTakenOverByTheCrashRuleAndClaimedAgain(_ kind: StoreKind) async throws {
        try await withSharedStore(kind) { store in
            let lease = store.leaseMilliseconds
            let message = makeMessage(id: "m-expired", key: "expired", dueAt: now)
            _ = try await store.schedule(message)
            #expect(try await store.claimDue(before: now, limit: 10, now: now).map(\.id) == ["m-expired"])
            // aa: answered; bb: handed over, no answer; cc: never handed over.
            try await store.recordHandOvers([
                HandOverMark(messageID: "m-expired", deviceToken: "aa", push: now, at: now + 1),
                HandOverMark(messageID: "m-expired", deviceToken: "bb", push: now, at: now + 2),
            ])
            try await store.recordOutcome(DeviceOutcome(messageID: "m-expired", deviceToken: "aa", kind: .sent, providerMessageID: "x",
                                                        at: now + 3))
            // Up to the lease's last millisecond the claim is its owner's.
            #expect(try await store.takeOverExpired(now: now + lease).resumed.isEmpty)
            #expect(try await store.outcomes(messageID: "m-expired").map(\.kind) == [.sent])
            let recovery = try await store.takeOverExpired(now: now + lease + 1)
            #expect(recovery == InterruptedRecovery(resumed: ["m-expired"], unconfirmedDevices: 1))
            let stored = try #require(try await store.message(id: "m-expired"))
            #expect(stored.state == .scheduled && !stored.isSending && stored.pushStartedAt == now && stored.keySpent)
            let outcomes = try await store.outcomes(messageID: "m-expired")
            #expect(outcomes.map(\.deviceToken) == ["aa", "bb"])
            #expect(outcomes.map(\.kind) == [.sent, .unconfirmed])
            // Claimed again, it continues the same push; the new lease holds.
            let again = try await store.claimDue(before: now + lease + 2, limit: 10, now: now + lease + 2)
            #expect(again.map(\.id) == ["m-expired"] && again.first?.pushStartedAt == now)
            #expect(try await store.takeOverExpired(now: now + lease + 3).resumed.isEmpty)
            #expect(try await store.takeOverExpired(now: now + 2 * lease + 3).resumed == ["m-expired"])
        }
    }
}
