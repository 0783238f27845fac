import Foundation
import HeraldCore
import HeraldTestSupport
import Testing
@testable import HeraldStorage

/// Schema v14's `campaign_funnel` (issue 29): a whole campaign's report
/// reads counts the store keeps (triggers before schema v17, the writer's
/// `MessageChanges` since). These cases reach it from outside the
/// store's own write paths (the contract's
/// `wholeCampaignCountsEqualCountingEveryMessage` covers those): a
/// database written before v14, and rows changed by hand.
@Suite("SQLite campaign counts (schema v14)", .storeCaseLimit)
struct CampaignFunnelTests {
    static func counts(_ store: SQLiteStore, _ campaign: String, whole: Bool) async throws -> Set<CohortCounts> {
        Set(try await store.campaignCounts(bundleID: "com.example.app", campaignID: campaign,
                                           createdFrom: whole ? nil : .min, createdBefore: whole ? nil : .max))
    }

    static func seed(_ store: SQLiteStore) async throws {
        let states: [MessageState] = [.scheduled, .sent, .displayed, .failed, .cancelled, .noDevices, .suppressed, .expired]
        try await store.importMessages((0..<40).map { i in
            var m = makeMessage(id: "m\(i)", key: "k\(i)", method: i % 2 == 0 ? .contextAware : .traditional,
                                state: states[i % states.count], createdAt: now + Int64(i))
            m.abTest = i % 5 != 0
            return m
        })
    }

    @Test func aVersion13DatabaseIsCountedWhenItOpens() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/v13.sqlite"
            do {
                let store = try SQLiteStore(path: path)
                try await Self.seed(store)
                await store.close()
                let db = try Database(path: path, create: false, busyTimeoutMs: 1000)
                try undoSchemaV14(db)
                try db.execute("PRAGMA user_version = 13")
                // Written by the old build after its last start: not in any count yet.
                try db.execute("UPDATE messages SET state = 'sent', sent_at = \(now + 500) WHERE id = 'm0'")
                db.close()
            }
            let store = try SQLiteStore(path: path)
            #expect(try userVersion(path) == SQLiteStore.schemaVersion)
            let whole = try await Self.counts(store, "welcome", whole: true)
            #expect(whole == (try await Self.counts(store, "welcome", whole: false)))
            #expect(whole.map(\.scheduled).reduce(0, +) == 40)
            #expect(whole.map(\.sent).reduce(0, +) >= 1)
            await store.close()
        }
    }

    @Test func rowsChangedByHandMoveTheirCounts() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/hand.sqlite"
            let store = try SQLiteStore(path: path)
            try await Self.seed(store)
            let db = try Database(path: path, create: false, busyTimeoutMs: 5000)
            // By hand, through a connection keeping the counts as the store's
            // writer does since schema v17 (`MessageChanges`): another client
            // of the file would change rows uncounted.
            db.messageChanges = try MessageChanges(on: db)
            // Another campaign, another cohort, another funnel, a hold, a delete.
            try db.execute("UPDATE messages SET campaign_id = 'moved' WHERE rowid % 3 = 0")
            try db.execute("UPDATE messages SET ab_test = 1 - ab_test, delivery_method = 'traditional' WHERE id IN ('m1', 'm2', 'm4')")
            try db.execute("UPDATE messages SET opened_at = \(now + 900), displayed_at = \(now + 800) WHERE id IN ('m5', 'm10')")
            try db.execute("UPDATE messages SET deferred_at = \(now + 50) WHERE id IN ('m7', 'm8', 'm11')")
            try db.execute("DELETE FROM messages WHERE id IN ('m13', 'm14')")
            db.close()
            for campaign in ["welcome", "moved", "nobody"] {
                let whole = try await Self.counts(store, campaign, whole: true)
                #expect(whole == (try await Self.counts(store, campaign, whole: false)), "\(campaign)")
            }
            let total = try await Self.counts(store, "welcome", whole: true).map(\.scheduled).reduce(0, +)
                + (try await Self.counts(store, "moved", whole: true)).map(\.scheduled).reduce(0, +)
            #expect(total == 38)
            #expect(try await Self.counts(store, "welcome", whole: true).map(\.deferred).reduce(0, +) > 0)
            await store.close()
        }
    }
}
