import HeraldCore
import Testing
@testable import HeraldStorage

/// Issue 26, SPEC §4b: a shared store's claims are fair across bundles
/// (`DueTurns`): a bundle with a released backlog takes one turn per round
/// like a bundle with one due message, a transactional message goes before
/// its bundle's older ones, and a bundle's quota (its throttle's free slots)
/// caps what one claim takes of it. On the stores shared by replicas
/// (PostgreSQL in SQL, the in-memory store with `DueTurns` itself).
@Suite("Store contract: fair claims across bundles", .storeCaseLimit)
struct FairClaimContractTests {
    func withSharedStore(_ kind: StoreKind, _ body: (any SharedDueStore & ContractStore) async throws -> Void) async throws {
        try await withStore(kind) { store in
            let shared = try #require(store as? any SharedDueStore & ContractStore, "\(kind) claims for replicas")
            try await body(shared)
        }
    }

    /// A backlog of `count` messages of `bundle`, all due at `dueAt`.
    static func backlog(_ bundle: String, _ count: Int, dueAt: Int64, prefix: String) -> [StoredMessage] {
        (0..<count).map { i in
            makeMessage(id: "\(prefix)-\(String(i + 1_000))", bundleID: bundle, key: "\(prefix)-\(i)", dueAt: dueAt)
        }
    }

    // MARK: Hostile first

    /// 600 messages of one bundle released at once, due before anything
    /// else: the other bundles' two due messages are in the first claim of 4.
    @Test(arguments: StoreKind.shared) func aReleasedBacklogDoesNotDelayAnotherBundle(_ kind: StoreKind) async throws {
        try await withSharedStore(kind) { store in
            try await store.importMessages(Self.backlog("com.big", 600, dueAt: now - 60_000, prefix: "big"))
            try await store.importMessages([
                makeMessage(id: "b-1", bundleID: "com.b", key: "b-1", dueAt: now - 1),
                makeMessage(id: "c-1", bundleID: "com.c", key: "c-1", dueAt: now),
                makeMessage(id: "c-later", bundleID: "com.c", key: "c-later", dueAt: now + 60_000),
            ])
            let first = try await store.claimDue(before: now, limit: 4, now: now)
            #expect(first.map(\.id) == ["b-1", "big-1000", "c-1", "big-1001"])
            // Then the backlog alone, oldest first, nothing twice, nothing not due.
            let rest = try await store.claimDue(before: now, limit: 1_000, now: now)
            #expect(rest.count == 598 && Set(rest.map(\.id)).isDisjoint(with: first.map(\.id)))
            #expect(rest.allSatisfy { $0.bundleID == "com.big" } && rest.first?.id == "big-1002")
        }
    }

    /// More bundles due than a poll takes: each poll starts its turns after
    /// the last bundle the previous one claimed from (the poller passes it),
    /// so every bundle is served within ceil(bundles / limit) polls — in id
    /// order as Swift compares them (PostgreSQL with `COLLATE "C"`), punctuation included.
    @Test(arguments: StoreKind.shared) func aPollStartsWhereTheLastOneStopped(_ kind: StoreKind) async throws {
        try await withSharedStore(kind) { store in
            let bundles = ["com.a", "com.a-b", "com.ab", "com.b", "com.c"]
            for (n, bundle) in bundles.enumerated() {
                try await store.importMessages(Self.backlog(bundle, 5, dueAt: now - 1_000, prefix: "p\(n)"))
            }
            var after: String?
            var served: [String] = []
            for _ in 0..<3 {
                let claimed = try await store.claimDue(before: now, limit: 2, now: now, quota: [:], after: after)
                #expect(claimed.count == 2)
                served += claimed.map(\.bundleID)
                after = claimed.last?.bundleID
            }
            #expect(served == ["com.a", "com.a-b", "com.ab", "com.b", "com.c", "com.a"])
        }
    }

    /// A transactional message due after its bundle's 300 others goes first.
    @Test(arguments: StoreKind.shared) func aTransactionalMessageGoesBeforeItsBundlesBacklog(_ kind: StoreKind) async throws {
        try await withSharedStore(kind) { store in
            try await store.importMessages(Self.backlog("com.big", 300, dueAt: now - 60_000, prefix: "big"))
            var urgent = makeMessage(id: "z-urgent", bundleID: "com.big", key: "urgent", dueAt: now)
            urgent.transactional = true
            var notYet = makeMessage(id: "z-urgent-later", bundleID: "com.big", key: "urgent-later", dueAt: now + 1)
            notYet.transactional = true
            try await store.importMessages([urgent, notYet])
            let claimed = try await store.claimDue(before: now, limit: 2, now: now)
            #expect(claimed.map(\.id) == ["z-urgent", "big-1000"])
            #expect(claimed.first?.transactional == true)
        }
    }

    /// Quotas: 0 skips a bundle, 2 takes two of it; absent bundles are not capped;
    /// a negative quota is none.
    @Test(arguments: StoreKind.shared) func aQuotaCapsOnlyItsBundle(_ kind: StoreKind) async throws {
        try await withSharedStore(kind) { store in
            try await store.importMessages(Self.backlog("com.a", 5, dueAt: now - 10, prefix: "a"))
            try await store.importMessages(Self.backlog("com.b", 5, dueAt: now - 10, prefix: "b"))
            try await store.importMessages(Self.backlog("com.c", 5, dueAt: now - 10, prefix: "c"))
            let claimed = try await store.claimDue(before: now, limit: 100, now: now, quota: ["com.a": 0, "com.b": 2, "com.x": 9, "com.c": -1])
            #expect(claimed.map(\.id) == ["b-1000", "b-1001"])
            let again = try await store.claimDue(before: now, limit: 100, now: now, quota: ["com.b": 1])
            #expect(again.filter { $0.bundleID == "com.b" }.map(\.id) == ["b-1002"])
            #expect(again.filter { $0.bundleID == "com.a" }.count == 5 && again.filter { $0.bundleID == "com.c" }.count == 5)
        }
    }

    @Test(arguments: StoreKind.shared) func aZeroLimitClaimsNothing(_ kind: StoreKind) async throws {
        try await withSharedStore(kind) { store in
            try await store.importMessages(Self.backlog("com.a", 3, dueAt: now - 10, prefix: "a"))
            #expect(try await store.claimDue(before: now, limit: 0, now: now).isEmpty)
            #expect(try await store.claimDue(before: now, limit: 3, now: now).count == 3)
        }
    }
}
