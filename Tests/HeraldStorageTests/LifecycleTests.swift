import HeraldCore
import HeraldTestSupport
import Testing
@testable import HeraldStorage

/// The store applies only the changes `MessageState.allowedTransitions`
/// allows; a refused one is a typed error and writes nothing.
@Suite("Life cycle: the store enforces the transition table", .timeLimit(.minutes(1)))
struct LifecycleTests {
    @Test("transition: every pair of states against the table", arguments: MessageState.allCases, MessageState.allCases)
    func transition(from: MessageState, to: MessageState) async throws {
        try await withStore { store, _ in
            let message = makeMessage(key: nil, state: from)
            _ = try await store.schedule(message)
            let outcome = DeviceOutcome(messageID: message.id, deviceToken: "aa", kind: .sent, at: now + 1)
            let move = {
                try await store.transition(
                    id: message.id, from: from, to: to, dueAt: nil, providerMessageID: nil, lastError: nil, now: now + 1,
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

    @Test("every outcome kind is stored as its raw value and reads back", arguments: DeviceOutcomeKind.allKnown)
    func outcomeKind(kind: DeviceOutcomeKind) async throws {
        try await withStore { store, _ in
            let message = makeMessage(key: nil)
            _ = try await store.schedule(message)
            let outcome = DeviceOutcome(messageID: message.id, deviceToken: "aa", kind: kind, reason: "why", at: now)
            try await store.recordOutcome(outcome)
            #expect(try await store.outcomes(messageID: message.id) == [outcome])
        }
    }

    @Test func aVersion2DatabaseHasItsOldOutcomeStringsMappedOntoTheKinds() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/v2.sqlite"
            let message = makeMessage(key: "old")
            let old: [(status: String, reason: String?)] = [
                ("sent", nil), ("rejected", "BadDeviceToken"), ("rejected", "BadTopic"), ("unregistered", "Unregistered"),
                ("revoke_unregistered", "Unregistered"), ("revoke_rejected", "BadTopic"), ("revoke_expired", nil),
                ("revoke_failed", "interrupted by shutdown"), ("revoked", nil),
            ]
            do {
                let db = try Database(path: path, create: true, busyTimeoutMs: 1000)
                try db.transaction {
                    try db.execute(Schema.v1)
                    try db.execute(Schema.v2)
                    try db.execute("PRAGMA user_version = 2")
                }
                try insertBeforeV6(db, message)
                for (index, row) in old.enumerated() {
                    try db.run("INSERT INTO outcomes(message_id, device_token, status, reason, at) VALUES (?1, ?2, ?3, ?4, ?5)") {
                        try $0.bind(message.id, at: 1)
                        try $0.bind("t\(index)", at: 2)
                        try $0.bind(row.status, at: 3)
                        try $0.bind(row.reason, at: 4)
                        try $0.bind(now + Int64(index), at: 5)
                    }
                }
                db.close()
            }
            let store = try SQLiteStore(path: path)
            let outcomes = try await store.outcomes(messageID: message.id)
            #expect(outcomes.map(\.kind) == [
                .sent, .badDeviceToken, .rejected, .unregistered, .revokeFailed, .revokeFailed, .revokeFailed, .revokeFailed,
                .revoked,
            ])
            #expect(outcomes.map(\.reason) == [
                nil, "BadDeviceToken", "BadTopic", "Unregistered", "unregistered: Unregistered", "rejected: BadTopic",
                "expired", "interrupted by shutdown", nil,
            ])
            #expect(outcomes.allSatisfy { DeviceOutcomeKind.allKnown.contains($0.kind) })
            await store.close()
        }
    }
}
