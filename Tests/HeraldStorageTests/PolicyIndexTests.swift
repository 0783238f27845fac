import Foundation
import HeraldCore
import HeraldTestSupport
import Testing
@testable import HeraldStorage

/// Schema v15's `messages_policy` (issue 26, the release of held messages):
/// the partial index no longer follows `state`, so the end of a held
/// message's push leaves it alone, while CampaignReport's time-ranged
/// `deferred` and `suppressed` counts (read through it) stay exact.
@Suite("SQLite policy index (schema v15)", .storeCaseLimit)
struct PolicyIndexTests {
    static let bundle = "com.example.app"

    static func counts(_ store: SQLiteStore, whole: Bool) async throws -> Set<CohortCounts> {
        Set(try await store.campaignCounts(bundleID: bundle, campaignID: "welcome",
                                           createdFrom: whole ? nil : .min, createdBefore: whole ? nil : .max))
    }

    /// The root pages the statement `sql` opens for writing (`OpenWrite`'s p2).
    static func writtenRoots(_ db: Database, _ sql: String) throws -> Set<Int64> {
        let statement = try db.prepare("EXPLAIN " + sql)
        var roots: Set<Int64> = []
        while try statement.step() {
            if statement.string(1) == "OpenWrite" { roots.insert(statement.int64(3)) }
        }
        return roots
    }

    @Test func onlyTheEndToSuppressedWritesThePolicyIndex() async throws {
        try await withTemporaryDirectory { dir in
            let store = try SQLiteStore(path: dir + "/explain.sqlite")
            defer { Task { await store.close() } }
            let (policy, end, suppressedEnd, hold) = try store.read { db in
                let root = try #require(try db.scalarInt("SELECT rootpage FROM sqlite_schema WHERE name = 'messages_policy'"))
                return (root, try Self.writtenRoots(db, SQLiteStore.endSQL), try Self.writtenRoots(db, SQLiteStore.endSuppressedSQL),
                        try Self.writtenRoots(db, SQLiteStore.holdUpdate))
            }
            #expect(!end.contains(policy), "every end but SUPPRESSED re-writes messages_policy")
            // The check can see it: these two do write it.
            #expect(suppressedEnd.contains(policy))
            #expect(hold.contains(policy))
        }
    }

    /// Every way into the index: held then sent, held then SUPPRESSED,
    /// SUPPRESSED straight away, imported SUPPRESSED; the ranged counts
    /// (the index) equal the whole-campaign ones (`campaign_funnel`).
    @Test func heldAndSuppressedMessagesAreCountedThroughTheIndex() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/paths.sqlite"
            let store = try SQLiteStore(path: path)
            try await store.importMessages([
                makeMessage(id: "held-sent", key: "k1"), makeMessage(id: "held-suppressed", key: "k2"),
                makeMessage(id: "suppressed", key: "k3"), makeMessage(id: "plain", key: "k4"),
                makeMessage(id: "imported", key: "k5", state: .suppressed),
            ])
            for id in ["held-sent", "held-suppressed"] {
                _ = try #require(try await store.claim(id: id, from: .scheduled, now: now + 1))
                #expect(try await store.hold(id: id, from: .scheduled, now: now + 2, recording: [
                    DeviceOutcome(messageID: id, deviceToken: "aa", kind: .waiting, reason: "quiet_hours", at: now + 2, notBefore: now + 10),
                ]))
            }
            for (id, to) in [("held-sent", MessageState.sent), ("held-suppressed", .suppressed), ("suppressed", .suppressed), ("plain", .sent)] {
                _ = try #require(try await store.claim(id: id, from: .scheduled, now: now + 20))
                #expect(try await store.transition(id: id, from: .scheduled, to: to, dueAt: nil, providerMessageID: nil, lastError: nil,
                                                   now: now + 21, recording: []))
            }
            let ranged = try await Self.counts(store, whole: false)
            #expect(ranged == (try await Self.counts(store, whole: true)))
            #expect(ranged.map(\.deferred).reduce(0, +) == 2)
            #expect(ranged.map(\.suppressed).reduce(0, +) == 3)
            await store.close()
            let db = try Database(path: path, create: false, busyTimeoutMs: 1000)
            defer { db.close() }
            #expect(try db.scalarInt("SELECT count(*) FROM messages INDEXED BY messages_policy WHERE deferred_at IS NOT NULL OR suppressed_at IS NOT NULL") == 4)
            #expect(try db.scalarInt("SELECT count(*) FROM messages WHERE suppressed_at IS NOT NULL") == 3)
            #expect(try db.scalarText("PRAGMA integrity_check") == "ok")
        }
    }

    @Test func aVersion14DatabaseKeepsItsSuppressedCounts() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/v14.sqlite"
            do {
                let store = try SQLiteStore(path: path)
                try await store.importMessages((0..<12).map { i in
                    makeMessage(id: "m\(i)", key: "k\(i)", state: [.suppressed, .scheduled, .sent][i % 3], createdAt: now + Int64(i))
                })
                await store.close()
                let db = try Database(path: path, create: false, busyTimeoutMs: 1000)
                try undoSchemaV15(db)
                try db.execute("PRAGMA user_version = 14")
                // Written by the old build: a held message, one more SUPPRESSED.
                try db.execute("UPDATE messages SET deferred_at = \(now + 5) WHERE id IN ('m1', 'm2')")
                try db.execute("UPDATE messages SET state = 'suppressed', updated_at = \(now + 6) WHERE id = 'm4'")
                db.close()
            }
            let store = try SQLiteStore(path: path)
            #expect(try userVersion(path) == SQLiteStore.schemaVersion)
            let ranged = try await Self.counts(store, whole: false)
            #expect(ranged == (try await Self.counts(store, whole: true)))
            #expect(ranged.map(\.suppressed).reduce(0, +) == 5)
            #expect(ranged.map(\.deferred).reduce(0, +) == 2)
            await store.close()
            let db = try Database(path: path, create: false, busyTimeoutMs: 1000)
            defer { db.close() }
            #expect(try db.scalarInt("SELECT suppressed_at FROM messages WHERE id = 'm4'") == now + 6)
            #expect(try db.scalarInt("SELECT count(*) FROM messages WHERE suppressed_at IS NOT NULL") == 5)
            #expect(try db.scalarText("PRAGMA integrity_check") == "ok")
        }
    }
}
