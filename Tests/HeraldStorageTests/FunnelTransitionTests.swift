import HeraldCore
import HeraldTestSupport
import Testing

@testable import HeraldStorage

/// A push's end (`SQLiteStore.endSQL`) writes the funnel itself, so the row is
/// written once (schema v13): for every state it can move to and every set of
/// milestones reached before, the funnel it writes equals `MessageFunnel`'s
/// expression over the new row, and the writer's funnel check
/// (`MessageChanges`) adds no write.
@Suite struct FunnelTransitionTests {
    @Test func theEndsFunnelEqualsTheExpressionAndTheRowIsWrittenOnce() async throws {
        try await withTemporaryDirectory { dir in
            let db = try Database(path: dir + "/funnel.sqlite", create: true, busyTimeoutMs: 1000)
            defer { db.close() }
            try Schema.migrate(db)
            db.messageChanges = try MessageChanges(on: db)  // as the store's writer
            // Every write of `funnel` (the end's own and any trigger's) leaves a row here.
            try db.execute("""
                CREATE TEMP TABLE funnel_writes(id TEXT NOT NULL);
                CREATE TEMP TRIGGER count_funnel_writes AFTER UPDATE OF funnel ON messages BEGIN
                    INSERT INTO funnel_writes VALUES (NEW.id);
                END;
                """)
            let milestones = ["handed_off_at", "sent_at", "displayed_at", "opened_at"]
            var cases = 0
            for mask in 0..<(1 << milestones.count) {
                for target in MessageState.allCases {
                    let id = "m-\(mask)-\(target.rawValue)"
                    let set = milestones.indices.filter { mask & (1 << $0) != 0 }.map { milestones[$0] }
                    try db.execute("""
                        INSERT INTO messages(id, bundle_id, platform, user_id, campaign_id, delivery_method, ab_test,
                                             window_start, window_end, due_at, state, created_at, updated_at, request
                                             \(set.map { ", " + $0 }.joined()))
                        VALUES ('\(id)', 'b', 'ios', 'u', 'c', 'traditional', 0, 1, 2, 1, 'scheduled', 1, 1, x''
                                \(String(repeating: ", 5", count: set.count)));
                        UPDATE messages SET funnel = \(MessageFunnel.expression("")) WHERE id = '\(id)';
                        DELETE FROM funnel_writes;
                        """)
                    try db.run(SQLiteStore.endSQL) {
                        try $0.bind(id, at: 1)
                        try $0.bind(MessageState.scheduled.rawValue, at: 2)
                        try $0.bind(target.rawValue, at: 3)
                        try $0.bind(nil as Int64?, at: 4)
                        try $0.bind(nil as String?, at: 5)
                        try $0.bind(nil as String?, at: 6)
                        try $0.bind(Int64(9), at: 7)
                    }
                    #expect(db.changes == 1, "\(id): the end matched its row")
                    let written = try db.scalarInt("SELECT funnel FROM messages WHERE id = '\(id)'")
                    let expected = try db.scalarInt("SELECT \(MessageFunnel.expression("")) FROM messages WHERE id = '\(id)'")
                    #expect(written == expected, "\(id)")
                    #expect(try db.scalarInt("SELECT count(*) FROM funnel_writes") == 1, "\(id): one write of the row")
                    cases += 1
                }
            }
            #expect(cases == 16 * MessageState.allCases.count)
        }
    }

    /// Any other UPDATE of a milestone still gets its funnel, from the
    /// writer's reading of the row changes since schema v17 (`MessageChanges`;
    /// an app's OPENED report sets `opened_at` alone).
    @Test func anotherChangeStillGetsItsFunnelFromTheWriter() async throws {
        try await withTemporaryDirectory { dir in
            let db = try Database(path: dir + "/funnel.sqlite", create: true, busyTimeoutMs: 1000)
            defer { db.close() }
            try Schema.migrate(db)
            db.messageChanges = try MessageChanges(on: db)
            try db.execute("""
                INSERT INTO messages(id, bundle_id, platform, user_id, campaign_id, delivery_method, ab_test,
                                     window_start, window_end, due_at, state, created_at, updated_at, request, sent_at)
                VALUES ('m', 'b', 'ios', 'u', 'c', 'traditional', 0, 1, 2, 1, 'sent', 1, 1, x'', 5);
                UPDATE messages SET funnel = \(MessageFunnel.expression("")) WHERE id = 'm';
                UPDATE messages SET opened_at = 7 WHERE id = 'm';
                """)
            #expect(try db.scalarInt("SELECT funnel FROM messages") == Int64(MessageFunnel.sent | MessageFunnel.opened))
        }
    }
}
