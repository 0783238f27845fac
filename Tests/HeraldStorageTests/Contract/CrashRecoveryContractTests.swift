import Foundation
import HeraldCore
import HeraldTestSupport
import Testing
@testable import HeraldStorage

/// SPEC §4's crash rule at the store, on every kind: after a kill mid-push,
/// devices handed to APNs without an answer are UNCONFIRMED (never resent),
/// devices with an outcome keep it, and the message waits again in its
/// pre-claim state so the devices never handed over are sent. Each case
/// stops the store with claims open (the "crash": what a kill -9 leaves,
/// every write having been durable when it returned) and re-opens the same
/// database (`withRestartableStore`). The in-memory store cannot survive a
/// restart (`StoreKind.survivesRestart`): on it the same instance runs the
/// recovery, so its cases check the rule, not durability.
@Suite("Store contract: crash recovery (hand-over marks)", .storeCaseLimit)
struct CrashRecoveryContractTests {
    /// Schedules `messages`, runs `crash` on the store, stops it, re-opens and recovers.
    func afterCrash(
        _ kind: StoreKind, _ messages: [StoredMessage], _ crash: (any ContractStore) async throws -> Void,
        check: (any ContractStore, InterruptedRecovery) async throws -> Void
    ) async throws {
        try await withRestartableStore(kind) { store, restart in
            for message in messages { _ = try await store.schedule(message) }
            try await crash(store)
            let restarted = try await restart()
            let recovery = try await restarted.recoverInterrupted(now: now + 1_000)
            try await check(restarted, recovery)
            #expect(try await restarted.recoverInterrupted(now: now + 2_000).resumed.isEmpty)
        }
    }

    @Test(arguments: StoreKind.all) func claimedButNeverHandedOverGoesBackUnspent(_ kind: StoreKind) async throws {
        let message = makeMessage(key: "never")
        try await afterCrash(kind, [message], { store in
            _ = try await store.claim(id: message.id, from: .scheduled, now: now)
        }) { store, recovery async throws in
            #expect(recovery == InterruptedRecovery(resumed: [message.id], unconfirmedDevices: 0))
            let stored = try #require(try await store.message(id: message.id))
            #expect(stored.state == .scheduled && !stored.isSending && stored.pushStartedAt == nil)
            #expect(!stored.keySpent)  // nothing can have reached a device
            #expect(try await store.pending(after: nil, limit: 10).map(\.id) == [message.id])
            #expect(try await store.outcomes(messageID: message.id).isEmpty)
        }
    }

    @Test(arguments: StoreKind.all) func handedOverWithoutAnswerIsUnconfirmedAndTheRestResumes(_ kind: StoreKind) async throws {
        let message = makeMessage(key: "mixed")
        try await afterCrash(kind, [message], { store in
            _ = try await store.claim(id: message.id, from: .scheduled, now: now)
            // aa: answered 200; bb: handed over, no answer; cc: never handed over.
            try await store.recordHandOver(messageID: message.id, deviceToken: "aa", push: now, at: now + 1)
            try await store.recordOutcome(DeviceOutcome(messageID: message.id, deviceToken: "aa", kind: .sent, providerMessageID: "x", at: now + 2))
            try await store.recordHandOver(messageID: message.id, deviceToken: "bb", push: now, at: now + 3)
            try await store.recordHandOver(messageID: message.id, deviceToken: "bb", push: now, at: now + 4)  // a retry: one mark
        }) { store, recovery async throws in
            #expect(recovery == InterruptedRecovery(resumed: [message.id], unconfirmedDevices: 1))
            let stored = try #require(try await store.message(id: message.id))
            #expect(stored.state == .scheduled && !stored.isSending)
            #expect(stored.pushStartedAt == now)  // the push stays open: the resumed claim skips aa and bb
            #expect(stored.keySpent)
            let outcomes = try await store.outcomes(messageID: message.id)
            #expect(outcomes.map(\.deviceToken) == ["aa", "bb"])
            #expect(outcomes.map(\.kind) == [.sent, .unconfirmed])
            #expect(outcomes[1].reason == DeviceOutcomeKind.unconfirmedReason)
            // The resumed claim continues the same push.
            let resumed = try #require(try await store.claim(id: message.id, from: .scheduled, now: now + 5_000))
            #expect(resumed.pushStartedAt == now && resumed.sendingSince == now + 5_000)
            #expect(try await store.transition(
                id: message.id, from: .scheduled, to: .sent, dueAt: nil, providerMessageID: nil, lastError: nil, now: now + 6_000))
            #expect(try await store.message(id: message.id)?.pushStartedAt == nil)
            #expect(try await store.handOvers(messageID: message.id, push: now).isEmpty)  // the push ended: marks dropped
        }
    }

    @Test(arguments: StoreKind.all) func everyDeviceAnsweredLeavesNothingUnconfirmed(_ kind: StoreKind) async throws {
        let message = makeMessage(key: "answered")
        try await afterCrash(kind, [message], { store in
            _ = try await store.claim(id: message.id, from: .scheduled, now: now)
            try await store.recordHandOver(messageID: message.id, deviceToken: "aa", push: now, at: now + 1)
            try await store.recordOutcome(DeviceOutcome(messageID: message.id, deviceToken: "aa", kind: .rejected, reason: "BadTopic", at: now + 2))
        }) { store, recovery async throws in
            #expect(recovery.unconfirmedDevices == 0)
            #expect(try await store.outcomes(messageID: message.id).map(\.kind) == [.rejected])
            #expect(try await store.message(id: message.id)?.state == .scheduled)
        }
    }

    @Test(arguments: StoreKind.all) func aFallbackPushDoesNotConfuseTheHandoffsMarks(_ kind: StoreKind) async throws {
        let message = makeMessage(key: "fallback", method: .contextAware)
        try await afterCrash(kind, [message], { store in
            // The handoff went out and ended (HANDED_OFF); then the fallback was claimed and crashed unsent.
            _ = try await store.claim(id: message.id, from: .scheduled, now: now)
            try await store.recordHandOver(messageID: message.id, deviceToken: "aa", push: now, at: now + 1)
            #expect(try await store.transition(
                id: message.id, from: .scheduled, to: .handedOff, dueAt: now + 3_600_000, providerMessageID: "h", lastError: nil,
                now: now + 2, recording: [DeviceOutcome(messageID: message.id, deviceToken: "aa", kind: .handedOff, at: now + 2)]))
            _ = try await store.claim(id: message.id, from: .handedOff, now: now + 3_600_000)
        }) { store, recovery async throws in
            #expect(recovery == InterruptedRecovery(resumed: [message.id], unconfirmedDevices: 0))
            let stored = try #require(try await store.message(id: message.id))
            #expect(stored.state == .handedOff && stored.pushStartedAt == nil && stored.keySpent)
            #expect(try await store.outcomes(messageID: message.id).map(\.kind) == [.handedOff])
        }
    }

    @Test(arguments: StoreKind.all) func releasingADeferredClaimUnspendsTheKey(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let message = makeMessage(key: "deferred")
            _ = try await store.schedule(message)
            _ = try await store.claim(id: message.id, from: .scheduled, now: now)
            #expect(try await store.releaseClaim(id: message.id, now: now + 1))
            #expect(try await store.releaseClaim(id: message.id, now: now + 2) == false)
            let stored = try #require(try await store.message(id: message.id))
            #expect(!stored.isSending && !stored.keySpent && stored.state == .scheduled)
            guard case .scheduled(_, let superseded) = try await store.schedule(makeMessage(key: "deferred")) else {
                Issue.record("a deferred (never sent) message's key must be replaceable")
                return
            }
            #expect(superseded == message.id)
        }
    }

    /// Which pushes a released claim keeps open: one that handed something
    /// over, or got a final answer, stays open with its key spent (the
    /// resumed claim skips those devices); one with only WAITING devices
    /// (held by the policy) or nothing is forgotten; a later push's claim
    /// never unspends the key the first one spent.
    @Test(arguments: StoreKind.all) func releasingAClaimKeepsOnlyATouchedPushOpen(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let marked = makeMessage(key: "marked"), answered = makeMessage(key: "answered")
            let waiting = makeMessage(key: "waiting"), later = makeMessage(key: "later", method: .contextAware)
            for message in [marked, answered, waiting, later] { _ = try await store.schedule(message) }
            for message in [marked, answered, waiting] { _ = try await store.claim(id: message.id, from: .scheduled, now: now) }
            try await store.recordHandOver(messageID: marked.id, deviceToken: "aa", push: now, at: now + 1)
            try await store.recordOutcome(DeviceOutcome(messageID: answered.id, deviceToken: "aa", kind: .rejected, reason: "BadTopic", at: now + 1))
            try await store.recordOutcome(DeviceOutcome(messageID: waiting.id, deviceToken: "aa", kind: .waiting, at: now + 1))
            for message in [marked, answered, waiting] { #expect(try await store.releaseClaim(id: message.id, now: now + 2)) }
            for message in [marked, answered] {
                let stored = try #require(try await store.message(id: message.id))
                #expect(stored.state == .scheduled && !stored.isSending && stored.pushStartedAt == now && stored.keySpent)
                #expect(stored.updatedAt == now + 2)
            }
            let forgotten = try #require(try await store.message(id: waiting.id))
            #expect(!forgotten.isSending && forgotten.pushStartedAt == nil && !forgotten.keySpent)

            // The hand-off went out and ended; the fallback's claim, released untouched, keeps the key spent.
            _ = try await store.claim(id: later.id, from: .scheduled, now: now)
            #expect(try await store.transition(
                id: later.id, from: .scheduled, to: .handedOff, dueAt: now + 3_600_000, providerMessageID: "h", lastError: nil,
                now: now + 1, recording: [DeviceOutcome(messageID: later.id, deviceToken: "aa", kind: .handedOff, at: now + 1)]))
            _ = try await store.claim(id: later.id, from: .handedOff, now: now + 3_600_000)
            #expect(try await store.releaseClaim(id: later.id, now: now + 3_600_001))
            let fallback = try #require(try await store.message(id: later.id))
            #expect(fallback.state == .handedOff && !fallback.isSending && fallback.pushStartedAt == nil && fallback.keySpent)
            #expect(try await store.releaseClaim(id: later.id, now: now + 3_600_002) == false)
        }
    }
}
