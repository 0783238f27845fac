import Foundation
import HeraldCore
import HeraldTestSupport
import Testing
@testable import HeraldStorage

/// SQLite's own part of crash recovery: a database written by v1 (before
/// hand-over marks) keeps the old rule. The crash rule itself is the store
/// contract's (Contract/CrashRecoveryContractTests.swift, every store).
@Suite("Crash recovery (SQLite: v1 databases)", .timeLimit(.minutes(1)))
struct CrashRecoveryTests {
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
