import HeraldCore
import Testing
@testable import HeraldStore

/// The store applies only the changes `MessageState.allowedTransitions`
/// allows; a refused one is a typed error and writes nothing.
@Suite("Life cycle: the store enforces the transition table")
struct LifecycleTests {
    @Test("transition: every pair of states against the table", arguments: MessageState.allCases, MessageState.allCases)
    func transition(from: MessageState, to: MessageState) async throws {
        try await withStore { store, _ in
            let message = makeMessage(key: nil, state: from)
            _ = try await store.schedule(message)
            let outcome = DeviceOutcome(messageID: message.id, deviceToken: "aa", status: "sent", at: now + 1)
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

    @Test("claim: only a state a push can end from (SCHEDULED, HANDED_OFF)", arguments: MessageState.allCases)
    func claim(from: MessageState) async throws {
        try await withStore { store, _ in
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

    @Test func supersedeAndCancelStillApplyTheirAllowedChanges() async throws {
        try await withStore { store, _ in
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
}
