import Foundation
import HeraldCore
import HeraldTestSupport
import Testing
@testable import HeraldStorage

/// SQLite's own part of the read side: its queries are index seeks, and a v3
/// database gets milestones, funnels and no-devices reasons. What every
/// store promises is Contract/ReadSideTests.swift.
@Suite("Read side (SQLite: query plans, v3 databases)", .timeLimit(.minutes(1)))
struct ReadSideSQLiteTests {
    @Test func theQueriesAreIndexSeeks() async throws {
        try await withStore { store, _ in
            let plans = try await store.write { db -> [String] in
                func plan(_ sql: String) throws -> String {
                    let statement = try db.prepare("EXPLAIN QUERY PLAN " + sql)
                    var lines: [String] = []
                    while try statement.step() { lines.append(statement.string(3)) }
                    return lines.joined(separator: " | ")
                }
                return [try plan(SQLiteStore.detailByID), try plan(SQLiteStore.detailByKey), try plan(SQLiteStore.listAfter),
                        try plan(SQLiteStore.campaign)]
            }
            #expect(plans[0].contains("USING INDEX sqlite_autoindex_messages_1 (id=?)"), "\(plans[0])")
            #expect(plans[1].contains("message_keys") && plans[1].contains("PRIMARY KEY"), "\(plans[1])")
            #expect(plans[2].contains("messages_user (bundle_id=? AND user_id=? AND (created_at,id)<(?,?))"), "\(plans[2])")
            #expect(!plans[2].contains("TEMP B-TREE"), "\(plans[2])")
            #expect(plans[3].contains("COVERING INDEX messages_campaign (bundle_id=? AND campaign_id=?"), "\(plans[3])")
            #expect(!plans[3].contains("TEMP B-TREE"), "\(plans[3])")
        }
    }

    @Test func aVersion3DatabaseGetsMilestonesFunnelsAndNoDevicesReasons() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/v3.sqlite"
            var handed = makeMessage(id: "handed", key: "a", method: .contextAware, state: .sent)
            handed.abTest = true
            let nobody = makeMessage(id: "nobody", key: "b", state: .noDevices)
            do {
                let db = try Database(path: path, create: true, busyTimeoutMs: 1000)
                try db.transaction {
                    for migration in [Schema.v1, Schema.v2, Schema.v3] { try db.execute(migration) }
                    try db.execute("PRAGMA user_version = 3")
                }
                try insertBeforeV6(db, handed)
                try insertBeforeV6(db, nobody)
                for (status, at) in [("handed_off", 10), ("sent", 20), ("displayed", 30), ("opened", 40), ("opened", 50)] {
                    try db.run("INSERT INTO outcomes(message_id, device_token, status, at) VALUES ('handed', 't', ?1, ?2)") {
                        try $0.bind(status, at: 1)
                        try $0.bind(now + Int64(at), at: 2)
                    }
                }
                db.close()
            }
            let store = try SQLiteStore(path: path)
            let detail = try #require(try await store.messageDetail(bundleID: "com.example.app", messageID: "handed"))
            #expect(detail.milestones == MessageMilestones(handedOffAt: now + 10, sentAt: now + 20, displayedAt: now + 30, openedAt: now + 40))
            #expect(detail.outcomes.allSatisfy { $0.httpStatus == nil && $0.attempts == nil && $0.environment == nil })
            let none = try #require(try await store.messageDetail(bundleID: "com.example.app", messageID: "nobody"))
            #expect(none.message.lastError?.contains("no registered device") == true)
            var ca = CohortCounts(deliveryMethod: .contextAware, abTest: true)
            (ca.scheduled, ca.handedOff, ca.sent, ca.fallbackSent, ca.displayed, ca.opened, ca.delivered) = (1, 1, 1, 1, 1, 1, 1)
            var tr = CohortCounts(deliveryMethod: .traditional, abTest: false)
            (tr.scheduled, tr.noDevices) = (1, 1)
            #expect(try await store.campaignCounts(bundleID: "com.example.app", campaignID: "welcome", createdFrom: nil, createdBefore: nil)
                    == [ca, tr])
            await store.close()
        }
    }
}
