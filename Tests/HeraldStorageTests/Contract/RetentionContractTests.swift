import HeraldCore
import Testing
@testable import HeraldStorage

/// Retention on every store: finished messages past the cutoff go, with
/// their outcomes, hand-over marks and keys, in bounded batches, oldest
/// first; waiting ones, recent ones and those owing a revoke stay. What
/// SQLite's tables and query plans show stays in RetentionTests.
@Suite("Store contract: retention", .storeCaseLimit)
struct RetentionContractTests {
    let day = RetentionTests.day
    let cutoff = RetentionTests.cutoff

    func finished(_ id: String, _ state: MessageState, at: Int64, key: String? = nil) -> StoredMessage {
        RetentionTests().finished(id, state, at: at, key: key)
    }

    /// Which of `ids` the store still has.
    func present(_ store: any ContractStore, _ ids: [String]) async throws -> Set<String> {
        var found: Set<String> = []
        for id in ids where try await store.message(id: id) != nil { found.insert(id) }
        return found
    }

    // MARK: hostile first: what must never go

    @Test("waiting messages, an owed revoke and messages at or after the cutoff are never deleted",
          arguments: StoreKind.all)
    func keepsWhatIsNotDue(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let old = cutoff - day
            let all = ["scheduled-old", "handed-off-old", "cancelled-revoke-owed", "sent-at-cutoff", "failed-recent"]
            try await store.importMessages([
                finished("scheduled-old", .scheduled, at: old),
                finished("handed-off-old", .handedOff, at: old),
                finished("cancelled-revoke-owed", .handedOff, at: old),
                finished("sent-at-cutoff", .sent, at: cutoff),
                finished("failed-recent", .failed, at: now - day),
            ])
            // Cancelled after its hand-off: a revoke push is owed.
            let cancelled = try await store.cancel(
                bundleID: "com.example.app", platform: .ios, userID: "user-1", campaignID: "welcome",
                idempotencyKey: "key-cancelled-revoke-owed", now: old)
            guard case .cancelled(_, revokeDue: true) = cancelled else {
                Issue.record("a handed-off message's cancel owes a revoke: \(cancelled)")
                return
            }
            let batch = try await store.pruneFinished(before: cutoff, limit: 500)
            #expect(batch == PruneBatch(messages: 0, outcomes: 0))
            #expect(try await present(store, all) == Set(all))
            // The revoke done, the cancelled message goes too.
            try await store.completeRevoke(messageID: "cancelled-revoke-owed")
            #expect(try await store.pruneFinished(before: cutoff, limit: 500).messages == 1)
            #expect(try await present(store, all) == Set(all).subtracting(["cancelled-revoke-owed"]))
        }
    }

    @Test("a key is remembered until its message is pruned: ALREADY_EXISTS before, a new message after",
          arguments: StoreKind.all)
    func keyPromiseLastsUntilPruned(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            try await store.importMessages([finished("sent-old", .sent, at: cutoff - 1, key: "k-sent")])
            var again = makeMessage(id: "again", key: "k-sent", createdAt: now)
            guard case .alreadyExists(let existing) = try await store.schedule(again) else {
                Issue.record("a sent message's key must answer ALREADY_EXISTS while it is kept")
                return
            }
            #expect(existing.id == "sent-old")
            #expect(try await store.pruneFinished(before: cutoff, limit: 500).messages == 1)
            #expect(try await store.message(bundleID: "com.example.app", idempotencyKey: "k-sent") == nil)
            again.id = "again-2"
            guard case .scheduled(let stored, nil) = try await store.schedule(again) else {
                Issue.record("after pruning, the key schedules a new message")
                return
            }
            #expect(stored.id == "again-2")
        }
    }

    @Test("a superseded message goes without its key, which stays with its live successor", arguments: StoreKind.all)
    func supersededKeyStaysWithSuccessor(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let first = makeMessage(id: "first", key: "k-live", createdAt: cutoff - day)
            _ = try await store.schedule(first)
            let second = makeMessage(id: "second", key: "k-live", createdAt: cutoff - day + 1)
            guard case .scheduled(_, "first") = try await store.schedule(second) else {
                Issue.record("the second Schedule supersedes the first")
                return
            }
            #expect(try await store.message(id: "first")?.state == .superseded)
            #expect(try await store.pruneFinished(before: cutoff, limit: 500).messages == 1)
            #expect(try await store.message(id: "first") == nil)
            #expect(try await store.message(bundleID: "com.example.app", idempotencyKey: "k-live")?.id == "second")
        }
    }

    // MARK: what goes

    @Test("every finished state goes, with its outcomes, hand-over marks and keys; the counts follow",
          arguments: StoreKind.all)
    func everyFinishedStateGoes(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let old = cutoff - 1
            let finishedStates = MessageState.allCases.filter { $0 != .scheduled && $0 != .handedOff }
            #expect(finishedStates.count == 8)  // SUPPRESSED (issue 26) is finished too
            let ids = finishedStates.map { "old-\($0.rawValue)" } + ["kept"]
            try await store.importMessages(finishedStates.map { finished("old-\($0.rawValue)", $0, at: old) }
                + [finished("kept", .sent, at: now)])
            for id in ["old-sent", "kept"] {
                for token in ["aa", "bb"] {
                    try await store.recordOutcome(DeviceOutcome(messageID: id, deviceToken: token, kind: .sent, at: old))
                }
            }
            try await store.recordHandOver(messageID: "old-failed", deviceToken: "aa", push: old, at: old)
            let batch = try await store.pruneFinished(before: cutoff, limit: 500)
            #expect(batch == PruneBatch(messages: 8, outcomes: 2))
            #expect(try await present(store, ids) == ["kept"])
            #expect(try await store.outcomes(messageID: "old-sent").isEmpty)
            #expect(try await store.outcomes(messageID: "kept").count == 2)
            #expect(try await store.handOvers(messageID: "old-failed", push: old).isEmpty)
            #expect(try await store.message(bundleID: "com.example.app", idempotencyKey: "key-old-sent") == nil)
            #expect(try await store.message(bundleID: "com.example.app", idempotencyKey: "key-kept")?.id == "kept")
            #expect(try await store.countsByState() == [.sent: 1])
        }
    }

    @Test("batches are bounded and take the oldest first", arguments: StoreKind.all)
    func batchesAreBoundedOldestFirst(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let total = 1_234
            let ids = (0..<total).map { "m\($0)" }
            try await store.importMessages((0..<total).map { i in
                finished("m\(i)", i.isMultiple(of: 2) ? .sent : .expired, at: cutoff - Int64(total - i) * 1_000)
            })
            var sizes: [Int] = []
            while true {
                let batch = try await store.pruneFinished(before: cutoff, limit: 500)
                sizes.append(batch.messages)
                if sizes.count == 1 {
                    // The oldest 500 went: m0 … m499.
                    let left = try await present(store, ids)
                    #expect(left.count == total - 500 && !left.contains("m499") && left.contains("m500"))
                }
                if batch.messages < 500 { break }
                if sizes.count > 10 { break }  // bounded, whatever the store answers
            }
            #expect(sizes == [500, 500, 234])
            #expect(try await present(store, ids).isEmpty)
        }
    }
}
