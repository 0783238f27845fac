import HeraldCore
import Testing
@testable import HeraldStorage

/// On every store: only the changes `MessageState.allowedTransitions` allows
/// apply; a refused one is a typed error and writes nothing (its outcomes
/// neither); every outcome kind reads back as written.
@Suite("Store contract: the store enforces the transition table", .timeLimit(.minutes(1)))
struct LifecycleContractTests {
    /// One (from, to) pair of states: every pair, for the transition table.
    struct StatePair: Sendable, CustomTestStringConvertible {
        let from: MessageState
        let to: MessageState

        static let all = MessageState.allCases.flatMap { from in MessageState.allCases.map { StatePair(from: from, to: $0) } }

        var testDescription: String { "\(from.rawValue) → \(to.rawValue)" }
    }

    @Test("transition: every pair of states against the table", arguments: StoreKind.all, StatePair.all)
    func transition(_ kind: StoreKind, _ pair: StatePair) async throws {
        let (from, to) = (pair.from, pair.to)
        try await withStore(kind) { store in
            let message = makeMessage(key: nil, state: from)
            _ = try await store.schedule(message)
            let outcome = DeviceOutcome(messageID: message.id, deviceToken: "aa", kind: .sent, at: now + 1)
            let move = {
                try await store.transition(
                    id: message.id, from: from, to: to, dueAt: nil, apnsID: nil, lastError: nil, now: now + 1,
                    recording: [outcome])
            }
            if from.canTransition(to: to) {
                #expect(try await move())
                #expect(try await store.message(id: message.id)?.state == to)
                #expect(try await store.outcomes(messageID: message.id) == [outcome])
            } else {
                await #expect(throws: StoreError.illegalTransition(from: from, to: to, id: message.id)) { try await move() }
                #expect(try await store.message(id: message.id) == message)  // nothing written…
                #expect(try await store.outcomes(messageID: message.id).isEmpty)  // …not even the outcomes
                #expect(try await store.countsByState() == [from: 1])
            }
        }
    }

    @Test("claim: only a state a push can end from (SCHEDULED, HANDED_OFF)", arguments: StoreKind.all, MessageState.allCases)
    func claim(_ kind: StoreKind, from: MessageState) async throws {
        try await withStore(kind) { store in
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

    @Test("every outcome kind is stored as its raw value and reads back", arguments: StoreKind.all, DeviceOutcomeKind.allKnown)
    func outcomeKind(_ storeKind: StoreKind, kind: DeviceOutcomeKind) async throws {
        try await withStore(storeKind) { store in
            let message = makeMessage(key: nil)
            _ = try await store.schedule(message)
            let outcome = DeviceOutcome(messageID: message.id, deviceToken: "aa", kind: kind, reason: "why", at: now)
            try await store.recordOutcome(outcome)
            #expect(try await store.outcomes(messageID: message.id) == [outcome])
        }
    }
}
