import HeraldCore
import HeraldTestSupport
import Testing
@testable import HeraldStorage

/// SQLite's own part of the life cycle: outcome strings of v2 databases.
/// The transition table, claims and outcome kinds are the store contract's
/// (Contract/LifecycleContractTests.swift, every store).
@Suite("Life cycle (SQLite: v2 outcome strings)", .timeLimit(.minutes(1)))
struct LifecycleTests {
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
