import Foundation
import HeraldCore
import HeraldPrimitives
import Testing
@testable import HeraldStorage

@Suite("Store contract: messages: last request wins, cancel, dispatch", .storeCaseLimit)
struct MessageTests {
    @Test(arguments: StoreKind.all) func scheduleStoresEverything(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            var message = makeMessage(method: .contextAware)
            message.abTest = true
            message.request = (0..<2_000).map { UInt8(truncatingIfNeeded: $0) }
            let outcome = try await store.schedule(message)
            #expect(outcome == .scheduled(message, supersededID: nil))
            #expect(!outcome.replaced)
            #expect(try await store.message(id: message.id) == message)
            #expect(try await store.message(bundleID: message.bundleID, idempotencyKey: "key-1") == message)
            #expect(try await store.countsByState() == [.scheduled: 1])
        }
    }

    @Test(arguments: StoreKind.all) func messagesWithoutKeyCoexist(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let a = makeMessage(key: nil), b = makeMessage(key: nil)
            _ = try await store.schedule(a)
            _ = try await store.schedule(b)
            #expect(try await store.countsByState() == [.scheduled: 2])
        }
    }

    @Test(arguments: StoreKind.all) func sameKeyReplacesUnsentMessage(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let first = makeMessage()
            let second = makeMessage(dueAt: now + 60_000, createdAt: now + 1_000)
            _ = try await store.schedule(first)
            let outcome = try await store.schedule(second)
            #expect(outcome == .scheduled(second, supersededID: first.id))
            #expect(outcome.replaced)
            #expect(try await store.message(id: first.id)?.state == .superseded)
            #expect(try await store.message(bundleID: first.bundleID, idempotencyKey: "key-1")?.id == second.id)
            #expect(try await store.countsByState() == [.scheduled: 1, .superseded: 1])
            // The superseded message leaves the due index.
            let pending = try await store.pending(after: nil, limit: 10)
            #expect(pending.map(\.id) == [second.id])
        }
    }

    @Test(arguments: StoreKind.all) func keysAreScopedPerBundle(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let a = makeMessage(bundleID: "com.example.a"), b = makeMessage(bundleID: "com.example.b")
            let first = try await store.schedule(a)
            let second = try await store.schedule(b)
            #expect(!first.replaced && !second.replaced)
            #expect(try await store.countsByState() == [.scheduled: 2])
        }
    }

    @Test(arguments: StoreKind.all, [MessageState.sent, .handedOff])
    func sameKeyAfterDeliveryIsAlreadyExists(_ kind: StoreKind, _ delivered: MessageState) async throws {
        try await withStore(kind) { store in
            let first = makeMessage()
            _ = try await store.schedule(first)
            _ = try #require(try await store.claim(id: first.id, from: .scheduled, now: now))
            #expect(try await store.transition(id: first.id, from: .scheduled, to: delivered, dueAt: nil, providerMessageID: nil, lastError: nil, now: now))
            let stored = try #require(try await store.message(id: first.id))

            let outcome = try await store.schedule(makeMessage())
            #expect(outcome == .alreadyExists(stored))
            #expect(try await store.countsByState() == [delivered: 1])
        }
    }

    @Test(arguments: StoreKind.all) func sameKeyWhileBeingSentIsAlreadyExists(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let first = makeMessage()
            _ = try await store.schedule(first)
            let claimed = try #require(try await store.claim(id: first.id, from: .scheduled, now: now + 5))
            #expect(claimed.isSending && claimed.attempts == 1)
            guard case .alreadyExists(let existing) = try await store.schedule(makeMessage()) else {
                Issue.record("a message being sent was replaced")
                return
            }
            #expect(existing.id == first.id)
        }
    }

    @Test(arguments: StoreKind.all) func sameKeyAfterCancelTakesTheKey(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let first = makeMessage()
            _ = try await store.schedule(first)
            _ = try await store.cancel(bundleID: first.bundleID, platform: .ios, userID: "user-1", campaignID: "welcome", idempotencyKey: "key-1", now: now)
            let second = makeMessage()
            #expect(try await store.schedule(second) == .scheduled(second, supersededID: nil))
            #expect(try await store.message(id: first.id)?.state == .cancelled)
            #expect(try await store.message(bundleID: first.bundleID, idempotencyKey: "key-1")?.id == second.id)
        }
    }

    // MARK: Cancel

    @Test(arguments: StoreKind.all) func cancelScheduledThenTwice(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let message = makeMessage()
            _ = try await store.schedule(message)
            let first = try await store.cancel(bundleID: message.bundleID, platform: .ios, userID: "user-1", campaignID: "welcome", idempotencyKey: "key-1", now: now + 1)
            guard case .cancelled(let cancelled, let revokeDue) = first else {
                Issue.record("not cancelled: \(first)")
                return
            }
            #expect(cancelled.state == .cancelled && !revokeDue && first.cancelled && first.state == .cancelled)
            let second = try await store.cancel(bundleID: message.bundleID, platform: .ios, userID: "user-1", campaignID: "welcome", idempotencyKey: "key-1", now: now + 2)
            #expect(second.cancelled && second.state == .cancelled)
            #expect(try await store.pending(after: nil, limit: 10).isEmpty)
            #expect(try await store.pendingRevokes().isEmpty)
        }
    }

    struct Mismatch: Sendable, CustomTestStringConvertible {
        var name: String
        var bundleID = "com.example.app", platform = Platform.ios, userID = "user-1", campaignID = "welcome", key = "key-1"
        var testDescription: String { name }
    }

    @Test(arguments: StoreKind.all, [
        Mismatch(name: "bundle", bundleID: "com.example.other"),
        Mismatch(name: "platform", platform: .android),
        Mismatch(name: "user", userID: "user-2"),
        Mismatch(name: "campaign", campaignID: "other"),
        Mismatch(name: "key", key: "key-2"),
    ])
    func cancelRequiresEveryFieldToMatch(_ kind: StoreKind, _ m: Mismatch) async throws {
        try await withStore(kind) { store in
            let message = makeMessage()
            _ = try await store.schedule(message)
            let outcome = try await store.cancel(bundleID: m.bundleID, platform: m.platform, userID: m.userID, campaignID: m.campaignID, idempotencyKey: m.key, now: now)
            #expect(outcome == .notFound)
            #expect(try await store.message(id: message.id)?.state == .scheduled)
        }
    }

    @Test(arguments: StoreKind.all) func cancelAfterSentIsRefused(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let message = makeMessage()
            _ = try await store.schedule(message)
            _ = try await store.claim(id: message.id, from: .scheduled, now: now)
            #expect(try await store.transition(id: message.id, from: .scheduled, to: .sent, dueAt: nil, providerMessageID: "apns-1", lastError: nil, now: now + 10))
            let outcome = try await store.cancel(bundleID: message.bundleID, platform: .ios, userID: "user-1", campaignID: "welcome", idempotencyKey: "key-1", now: now + 20)
            #expect(!outcome.cancelled && outcome.state == .sent)
            let stored = try #require(try await store.message(id: message.id))
            #expect(stored.providerMessageID == "apns-1" && !stored.isSending && stored.state == .sent)
        }
    }

    @Test(arguments: StoreKind.all) func cancelWhileBeingSentReportsSent(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let message = makeMessage()
            _ = try await store.schedule(message)
            _ = try await store.claim(id: message.id, from: .scheduled, now: now)
            let outcome = try await store.cancel(bundleID: message.bundleID, platform: .ios, userID: "user-1", campaignID: "welcome", idempotencyKey: "key-1", now: now)
            #expect(!outcome.cancelled && outcome.state == .sent)
        }
    }

    @Test(arguments: StoreKind.all) func cancelHandedOffOwesARevoke(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let message = makeMessage(method: .contextAware)
            _ = try await store.schedule(message)
            _ = try await store.claim(id: message.id, from: .scheduled, now: now)
            #expect(try await store.transition(id: message.id, from: .scheduled, to: .handedOff, dueAt: message.windowEnd, providerMessageID: nil, lastError: nil, now: now))
            #expect(try await store.pending(after: nil, limit: 10) == [PendingEntry(id: message.id, dueAt: message.windowEnd, state: .handedOff, bundleID: message.bundleID)])

            let outcome = try await store.cancel(bundleID: message.bundleID, platform: .ios, userID: "user-1", campaignID: "welcome", idempotencyKey: "key-1", now: now + 100)
            guard case .cancelled(_, let revokeDue) = outcome else {
                Issue.record("not cancelled: \(outcome)")
                return
            }
            #expect(revokeDue)
            #expect(try await store.pendingRevokes() == [PendingRevoke(messageID: message.id, dueAt: now + 100)])
            #expect(try await store.pending(after: nil, limit: 10).isEmpty)

            let again = try await store.cancel(bundleID: message.bundleID, platform: .ios, userID: "user-1", campaignID: "welcome", idempotencyKey: "key-1", now: now + 200)
            #expect(again == .cancelled(try #require(try await store.message(id: message.id)), revokeDue: false))
            try await store.completeRevoke(messageID: message.id)
            #expect(try await store.pendingRevokes().isEmpty)
        }
    }

    // MARK: Dispatch

    @Test(arguments: StoreKind.all) func claimIsCompareAndSet(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let message = makeMessage()
            _ = try await store.schedule(message)
            #expect(try await store.claim(id: message.id, from: .handedOff, now: now) == nil)
            #expect(try await store.claim(id: message.id, from: .scheduled, now: now) != nil)
            #expect(try await store.claim(id: message.id, from: .scheduled, now: now) == nil)
            #expect(try await store.due(before: .max, limit: 10).isEmpty)
            // Waiting again is not a state change: a same-state "transition"
            // is refused (the APNs client retries within the TTL; a claim
            // goes back unsent through releaseClaim).
            await #expect(throws: StoreError.illegalTransition(from: .scheduled, to: .scheduled, id: message.id)) {
                try await store.transition(id: message.id, from: .scheduled, to: .scheduled, dueAt: now + 90_000, providerMessageID: nil, lastError: "TooManyRequests", now: now)
            }
            #expect(try await store.releaseClaim(id: message.id, now: now + 1))
            let retried = try #require(try await store.due(before: .max, limit: 10).first)
            #expect(retried.id == message.id && retried.lastError == nil && !retried.isSending)
            #expect(try await !(store.transition(id: message.id, from: .handedOff, to: .sent, dueAt: nil, providerMessageID: nil, lastError: nil, now: now)))
        }
    }

    @Test(arguments: StoreKind.all) func dueIsOrderedAndBounded(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let late = makeMessage(key: "a", dueAt: now + 3), early = makeMessage(key: "b", dueAt: now + 1)
            let future = makeMessage(key: "c", dueAt: now + 1_000)
            for m in [late, early, future] { _ = try await store.schedule(m) }
            #expect(try await store.due(before: now + 10, limit: 10).map(\.id) == [early.id, late.id])
            #expect(try await store.due(before: now + 10, limit: 1).map(\.id) == [early.id])
            #expect(try await store.oldestDue(now: now + 10) == now + 1)
            #expect(try await store.oldestDue(now: now) == nil)
        }
    }

    @Test(arguments: StoreKind.all) func outcomesAreRecorded(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let message = makeMessage()
            _ = try await store.schedule(message)
            let a = DeviceOutcome(messageID: message.id, deviceToken: "aa", kind: .sent, providerMessageID: "id-1", at: now)
            let b = DeviceOutcome(messageID: message.id, deviceToken: "bb", kind: .unregistered, reason: "Unregistered", at: now + 1)
            try await store.recordOutcome(a)
            try await store.recordOutcome(b)
            #expect(try await store.outcomes(messageID: message.id) == [a, b])
            // Foreign key: no outcome for an unknown message.
            await #expect(throws: StoreError.self) {
                try await store.recordOutcome(DeviceOutcome(messageID: "nope", deviceToken: "aa", kind: .sent, at: now))
            }
        }
    }

    // Crash mid-send: CrashRecoveryContractTests.
}
