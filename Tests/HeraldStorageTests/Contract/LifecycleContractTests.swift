import HeraldCore
import Testing
@testable import HeraldStorage

/// On every store: only the changes `MessageState.allowedTransitions` allows
/// apply; a refused one is a typed error and writes nothing (its outcomes
/// neither); every outcome kind reads back as written.
@Suite("Store contract: the store enforces the transition table", .storeCaseLimit)
struct LifecycleContractTests {
    // One store per kind for every pair (a fresh message each): a schema
    // per pair made 81 PostgreSQL cases queue behind the four-case gate.

    @Test("transition: every pair of states against the table", arguments: StoreKind.all)
    func transition(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            for from in MessageState.allCases {
                for to in MessageState.allCases {
                    try await Self.transition(store, from: from, to: to)
                }
            }
        }
    }

    static func transition(_ store: any ContractStore, from: MessageState, to: MessageState) async throws {
        let pair: Comment = "\(from.rawValue) → \(to.rawValue)"
        let message = makeMessage(key: nil, state: from)
        _ = try await store.schedule(message)
        let before = try await store.countsByState()
        let outcome = DeviceOutcome(messageID: message.id, deviceToken: "aa", kind: .sent, at: now + 1)
        let move = {
            try await store.transition(
                id: message.id, from: from, to: to, dueAt: nil, providerMessageID: nil, lastError: nil, now: now + 1,
                recording: [outcome])
        }
        if from.canTransition(to: to) {
            #expect(try await move(), pair)
            #expect(try await store.message(id: message.id)?.state == to, pair)
            #expect(try await store.outcomes(messageID: message.id) == [outcome], pair)
        } else {
            await #expect(throws: StoreError.illegalTransition(from: from, to: to, id: message.id), pair) { try await move() }
            #expect(try await store.message(id: message.id) == message, pair)  // nothing written…
            #expect(try await store.outcomes(messageID: message.id).isEmpty, pair)  // …not even the outcomes
            #expect(try await store.countsByState() == before, pair)
        }
    }

    @Test("claim: only a state a push can end from (SCHEDULED, HANDED_OFF)", arguments: StoreKind.all)
    func claim(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            for from in MessageState.allCases {
                let message = makeMessage(key: nil, state: from)
                _ = try await store.schedule(message)
                if from == .scheduled || from == .handedOff {
                    let claimed = try #require(try await store.claim(id: message.id, from: from, now: now))
                    #expect(claimed.isSending && claimed.attempts == 1)
                } else {
                    await #expect(throws: StoreError.illegalTransition(from: from, to: .sent, id: message.id)) {
                        try await store.claim(id: message.id, from: from, now: now)
                    }
                    #expect(try await store.message(id: message.id) == message)
                }
            }
        }
    }

    @Test(arguments: StoreKind.all) func supersedeAndCancelStillApplyTheirAllowedChanges(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let first = makeMessage(), second = makeMessage(createdAt: now + 1)
            _ = try await store.schedule(first)
            #expect(try await store.schedule(second) == .scheduled(second, supersededID: first.id))
            #expect(try await store.message(id: first.id)?.state == .superseded)
            let cancelled = try await store.cancel(
                bundleID: second.bundleID, platform: .ios, userID: second.userID, campaignID: second.campaignID,
                idempotencyKey: "key-1", now: now + 2)
            #expect(cancelled.state == .cancelled)
            #expect(try await store.countsByState() == [.superseded: 1, .cancelled: 1])
        }
    }

    @Test("every outcome kind is stored as its raw value and reads back", arguments: StoreKind.all)
    func outcomeKind(_ storeKind: StoreKind) async throws {
        try await withStore(storeKind) { store in
            for kind in DeviceOutcomeKind.allKnown {
                let message = makeMessage(key: nil)
                _ = try await store.schedule(message)
                let outcome = DeviceOutcome(messageID: message.id, deviceToken: "aa", kind: kind, reason: "why", at: now)
                try await store.recordOutcome(outcome)
                #expect(try await store.outcomes(messageID: message.id) == [outcome])
            }
        }
    }
}
