import Foundation
import HeraldCore
import HeraldTestSupport
import Testing
@testable import HeraldStorage

/// SPEC §4's crash rule at the store: after a kill mid-push, devices handed
/// to APNs without an answer are UNCONFIRMED (never resent), devices with an
/// outcome keep it, and the message waits again in its pre-claim state so the
/// devices never handed over are sent. Each test closes the store with claims
/// open (the "crash") and reopens it.
@Suite("Crash recovery (hand-over marks)", .timeLimit(.minutes(1)))
struct CrashRecoveryTests {
    /// Schedules `messages`, runs `crash` on the store, closes it, reopens and recovers.
    func afterCrash(
        _ messages: [StoredMessage], _ crash: (SQLiteStore) async throws -> Void,
        check: (SQLiteStore, InterruptedRecovery) async throws -> Void
    ) async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/crash.sqlite"
            let store = try SQLiteStore(path: path)
            for message in messages { _ = try await store.schedule(message) }
            try await crash(store)
            await store.close()
            let restarted = try SQLiteStore(path: path)
            let recovery = try await restarted.recoverInterrupted(now: now + 1_000)
            try await check(restarted, recovery)
            #expect(try await restarted.recoverInterrupted(now: now + 2_000).resumed.isEmpty)
            await restarted.close()
        }
    }

    @Test func claimedButNeverHandedOverGoesBackUnspent() async throws {
        let message = makeMessage(key: "never")
        try await afterCrash([message], { store in
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

    @Test func handedOverWithoutAnswerIsUnconfirmedAndTheRestResumes() async throws {
        let message = makeMessage(key: "mixed")
        try await afterCrash([message], { store in
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

    @Test func everyDeviceAnsweredLeavesNothingUnconfirmed() async throws {
        let message = makeMessage(key: "answered")
        try await afterCrash([message], { store in
            _ = try await store.claim(id: message.id, from: .scheduled, now: now)
            try await store.recordHandOver(messageID: message.id, deviceToken: "aa", push: now, at: now + 1)
            try await store.recordOutcome(DeviceOutcome(messageID: message.id, deviceToken: "aa", kind: .rejected, reason: "BadTopic", at: now + 2))
        }) { store, recovery async throws in
            #expect(recovery.unconfirmedDevices == 0)
            #expect(try await store.outcomes(messageID: message.id).map(\.kind) == [.rejected])
            #expect(try await store.message(id: message.id)?.state == .scheduled)
        }
    }

    @Test func aFallbackPushDoesNotConfuseTheHandoffsMarks() async throws {
        let message = makeMessage(key: "fallback", method: .contextAware)
        try await afterCrash([message], { store in
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

    @Test func releasingADeferredClaimUnspendsTheKey() async throws {
        try await withStore { store, _ in
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

    @Test func aVersion1DatabaseOpensAndItsInFlightMessagesKeepTheOldRule() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/v1.sqlite"
            let silent = makeMessage(key: "silent"), delivered = makeMessage(key: "delivered"), idle = makeMessage(key: "idle")
            do {
                // A database as a v1 build left it after a kill mid-send.
                let db = try Database(path: path, create: true, busyTimeoutMs: 1000)
                try db.transaction {
                    try db.execute(Schema.v1)
                    try db.execute("PRAGMA user_version = 1")
                }
                for message in [silent, delivered, idle] {
                    let sending = message.id == idle.id ? "NULL" : "\(now)"
                    try db.execute("""
                        INSERT INTO messages(id, bundle_id, platform, user_id, campaign_id, idempotency_key, delivery_method,
                            ab_test, window_start, window_end, due_at, state, created_at, updated_at, sending_since,
                            send_started_at, request)
                        VALUES ('\(message.id)', 'com.example.app', 'ios', 'user-1', 'welcome', '\(message.idempotencyKey!)',
                            'traditional', 0, \(now), \(now + 3_600_000), \(now), 'scheduled', \(now), \(now), \(sending),
                            \(sending), x'00')
                        """)
                }
                try db.execute("""
                    INSERT INTO outcomes(message_id, device_token, status, apns_id, reason, at)
                    VALUES ('\(delivered.id)', 'aa', 'sent', 'x', NULL, \(now + 1))
                    """)
                db.close()
            }
            let store = try SQLiteStore(path: path)
            #expect(try userVersion(path) == SQLiteStore.schemaVersion)
            #expect(try await store.recoverInterrupted(now: now + 1_000).resumed.isEmpty)
            let s = try #require(try await store.message(id: silent.id))
            #expect(s.state == .failed && s.lastError?.hasPrefix("interrupted") == true && !s.isSending)
            #expect(try await store.message(id: delivered.id)?.state == .sent)
            #expect(try await store.pending(after: nil, limit: 10).map(\.id) == [idle.id])
            #expect(try await store.countsByState() == [.failed: 1, .sent: 1, .scheduled: 1])
            await store.close()
        }
    }
}
