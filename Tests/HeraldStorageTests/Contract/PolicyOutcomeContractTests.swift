import Foundation
import HeraldCore
import HeraldTestSupport
import Testing
@testable import HeraldStorage

/// Issue 26 (SPEC §4b) at the store, on every kind: what the delivery
/// policy's verdicts write. `hold` records WAITING devices (reason,
/// `notBefore`) beside the push's final outcomes, gives the claim back and
/// moves the message's due time to the earliest `notBefore`; the message
/// stays SCHEDULED / HANDED_OFF while a device waits; a held device is sent
/// later (WAITING is not an answer: not for the resumed push's history, not
/// for the crash rule); SUPPRESSED is a terminal state counted like any.
@Suite("Store contract: delivery policy outcomes (WAITING holds, SUPPRESSED)", .storeCaseLimit)
struct PolicyOutcomeContractTests {
    static func waiting(_ id: String, _ token: String, _ reason: HoldReason, until: Int64, at: Int64) -> DeviceOutcome {
        DeviceOutcome(messageID: id, deviceToken: token, kind: .waiting, reason: reason.rawValue, at: at, notBefore: until)
    }

    // Hostile first: what a hold refuses, writing nothing.

    @Test(arguments: StoreKind.all) func aHoldWithoutAWaitingDeviceOrItsTimeWritesNothing(_ kind: StoreKind) async throws {
        let message = makeMessage(key: "refused")
        try await withStore(kind) { store in
            _ = try await store.schedule(message)
            _ = try #require(try await store.claim(id: message.id, from: .scheduled, now: now))
            let sent = DeviceOutcome(messageID: message.id, deviceToken: "aa", kind: .sent, at: now + 1)
            let noTime = DeviceOutcome(messageID: message.id, deviceToken: "bb", kind: .waiting, reason: "quiet_hours", at: now + 1)
            let otherMessage = Self.waiting("someone-else", "cc", .throttle, until: now + 5_000, at: now + 1)
            for outcomes in [[], [sent], [sent, noTime], [otherMessage]] {
                await #expect(throws: StoreError.self) {
                    try await store.hold(id: message.id, from: .scheduled, now: now + 2, recording: outcomes)
                }
            }
            #expect(try await store.outcomes(messageID: message.id).isEmpty)
            #expect(try #require(try await store.message(id: message.id)).isSending)
        }
    }

    @Test(arguments: StoreKind.all) func aHoldOfAMessageNotClaimedRecordsOnlyTheFinalOutcomes(_ kind: StoreKind) async throws {
        let message = makeMessage(key: "unclaimed")
        try await withStore(kind) { store in
            _ = try await store.schedule(message)
            let sent = DeviceOutcome(messageID: message.id, deviceToken: "aa", kind: .sent, at: now + 1)
            let held = Self.waiting(message.id, "bb", .quietHours, until: now + 60_000, at: now + 1)
            #expect(try await store.hold(id: message.id, from: .scheduled, now: now + 1, recording: [sent, held]) == false)
            #expect(try await store.outcomes(messageID: message.id).map(\.kind) == [.sent])
            let stored = try #require(try await store.message(id: message.id))
            #expect(stored.dueAt == message.dueAt && stored.state == .scheduled)
        }
    }

    // The hold itself.

    @Test(arguments: StoreKind.all) func aHoldKeepsTheMessageWaitingUntilTheEarliestNotBefore(_ kind: StoreKind) async throws {
        let message = makeMessage(key: "held")
        try await withStore(kind) { store in
            _ = try await store.schedule(message)
            _ = try #require(try await store.claim(id: message.id, from: .scheduled, now: now))
            let quiet = Self.waiting(message.id, "aa", .quietHours, until: now + 3_600_000, at: now + 1)
            let capped = Self.waiting(message.id, "bb", .frequencyCap, until: now + 600_000, at: now + 1)
            #expect(try await store.hold(id: message.id, from: .scheduled, now: now + 1, recording: [quiet, capped]))
            let stored = try #require(try await store.message(id: message.id))
            #expect(stored.state == .scheduled && !stored.isSending)
            #expect(stored.dueAt == now + 600_000)  // the earliest not_before
            // Nothing reached a device: the key is not spent (a new Schedule may replace it).
            #expect(!stored.keySpent && stored.pushStartedAt == nil)
            #expect(try await store.due(before: now + 599_999, limit: 10).isEmpty)
            #expect(try await store.due(before: now + 600_000, limit: 10).map(\.id) == [message.id])
            let outcomes = try await store.outcomes(messageID: message.id)
            #expect(outcomes.map(\.kind) == [.waiting, .waiting])
            #expect(outcomes.map(\.notBefore) == [now + 3_600_000, now + 600_000])
            #expect(outcomes.map(\.reason) == ["quiet_hours", "frequency_cap"])
            // Held twice: still one message, due at the new time.
            _ = try #require(try await store.claim(id: message.id, from: .scheduled, now: now + 600_000))
            let again = Self.waiting(message.id, "bb", .throttle, until: now + 601_000, at: now + 600_001)
            #expect(try await store.hold(id: message.id, from: .scheduled, now: now + 600_001, recording: [again]))
            #expect(try await store.message(id: message.id)?.dueAt == now + 601_000)
            // Cancel works on a held message as on any SCHEDULED one.
            let cancelled = try await store.cancel(bundleID: message.bundleID, platform: message.platform, userID: message.userID,
                                                   campaignID: message.campaignID, idempotencyKey: "held", now: now + 600_002)
            #expect(cancelled.state == .cancelled)
        }
    }

    @Test(arguments: StoreKind.all) func aDeviceSentBesideAHeldOneIsNeverResentAndTheHeldOneIsSentLater(_ kind: StoreKind) async throws {
        let message = makeMessage(key: "mixed")
        let policy = DeliveryPolicy()
        try await withStore(kind) { store in
            _ = try await store.schedule(message)
            let claimed = try #require(try await store.claim(id: message.id, from: .scheduled, now: now))
            let push = try #require(claimed.pushStartedAt)
            try await store.recordHandOver(messageID: message.id, deviceToken: "aa", push: push, at: now + 1)
            let sent = DeviceOutcome(messageID: message.id, deviceToken: "aa", kind: .sent, providerMessageID: "p-1", at: now + 2)
            let held = Self.waiting(message.id, "bb", .quietHours, until: now + 60_000, at: now + 2)
            #expect(try await store.hold(id: message.id, from: .scheduled, now: now + 2, recording: [sent, held]))
            let stored = try #require(try await store.message(id: message.id))
            // aa reached a device: the push stays open and the key is spent.
            #expect(stored.state == .scheduled && stored.keySpent && stored.pushStartedAt == push)
            // Due again: the resumed push's history has aa (never resent), not bb (sent now).
            let resumed = try #require(try await store.claim(id: message.id, from: .scheduled, now: now + 60_000))
            #expect(resumed.pushStartedAt == push)
            #expect(policy.isResumed(pushStart: push, sendingSince: resumed.sendingSince))
            let history = policy.history(try await store.outcomes(messageID: message.id), pushStart: push)
            #expect(history.map(\.deviceToken) == ["aa"])
            let bbSent = DeviceOutcome(messageID: message.id, deviceToken: "bb", kind: .sent, providerMessageID: "p-2", at: now + 60_001)
            let facts = resumed.deliveryFacts
            #expect(policy.end(of: .alert, for: facts, records: history + [bbSent], otherwise: MessageEnd(.noDevices)).state == .sent)
            #expect(try await store.transition(id: message.id, from: .scheduled, to: .sent, dueAt: nil, providerMessageID: "p-1",
                                               lastError: nil, now: now + 60_001, recording: [bbSent]))
            let kinds = try await store.outcomes(messageID: message.id).map { "\($0.deviceToken) \($0.kind)" }
            #expect(kinds == ["aa sent", "bb waiting", "bb sent"])
        }
    }

    @Test(arguments: StoreKind.all) func aWaitingDeviceHandedOverBeforeACrashIsUnconfirmedNotResent(_ kind: StoreKind) async throws {
        let message = makeMessage(key: "crash")
        try await withRestartableStore(kind) { store, restart in
            _ = try await store.schedule(message)
            let first = try #require(try await store.claim(id: message.id, from: .scheduled, now: now))
            let push = try #require(first.pushStartedAt)
            let sent = DeviceOutcome(messageID: message.id, deviceToken: "aa", kind: .sent, at: now + 1)
            #expect(try await store.hold(id: message.id, from: .scheduled, now: now + 1, recording: [
                sent, Self.waiting(message.id, "bb", .quietHours, until: now + 10_000, at: now + 1),
            ]))
            _ = try #require(try await store.claim(id: message.id, from: .scheduled, now: now + 10_000))
            try await store.recordHandOver(messageID: message.id, deviceToken: "bb", push: push, at: now + 10_001)
            let restarted = try await restart()
            let recovery = try await restarted.recoverInterrupted(now: now + 20_000)
            // bb's WAITING row is not an answer: handed over, no answer → UNCONFIRMED.
            #expect(recovery == InterruptedRecovery(resumed: [message.id], unconfirmedDevices: 1))
            let history = DeliveryPolicy().history(try await restarted.outcomes(messageID: message.id), pushStart: push)
            #expect(Set(history.map { "\($0.deviceToken) \($0.kind)" }) == ["aa sent", "bb unconfirmed"])
        }
    }

    // SUPPRESSED.

    @Test(arguments: StoreKind.all) func everyDeviceSuppressedEndsTheMessageSuppressedAndItIsCounted(_ kind: StoreKind) async throws {
        let message = makeMessage(key: "withheld")
        let policy = DeliveryPolicy()
        try await withStore(kind) { store in
            _ = try await store.schedule(message)
            let claimed = try #require(try await store.claim(id: message.id, from: .scheduled, now: now))
            let withheld = ["aa", "bb"].map {
                DeviceOutcome(messageID: message.id, deviceToken: $0, kind: .suppressed, reason: "frequency_cap", at: now + 1)
            }
            let end = policy.end(of: .alert, for: claimed.deliveryFacts, records: withheld, otherwise: MessageEnd(.noDevices))
            #expect(end.state == .suppressed)
            #expect(try await store.transition(id: message.id, from: .scheduled, to: end.state, dueAt: nil, providerMessageID: nil,
                                               lastError: end.error, now: now + 1, recording: withheld))
            let stored = try #require(try await store.message(id: message.id))
            #expect(stored.state == .suppressed && stored.state.isTerminal && !stored.isSending)
            #expect(stored.lastError?.contains("frequency_cap") == true)
            #expect(try await store.countsByState()[.suppressed] == 1)
            #expect(try await store.outcomes(messageID: message.id).map(\.kind) == [.suppressed, .suppressed])
            // Terminal: nothing moves it on.
            await #expect(throws: StoreError.self) {
                try await store.transition(id: message.id, from: .suppressed, to: .sent, dueAt: nil, providerMessageID: nil,
                                           lastError: nil, now: now + 2)
            }
        }
    }
}
