import HeraldCore
import HeraldTestSupport
import Testing

@testable import HeraldStorage

/// Schema v17's writer upkeep (`MessageChanges`) against the triggers it
/// replaced: the same writes, on a database with the v16 triggers and on
/// one with the pre-update hook, leave the same counts, campaign counts,
/// events and funnels — and both equal the counts taken from scratch.
@Suite struct MessageChangesTests {
    /// Two databases at schema v17 with the same 60 messages: `triggers`
    /// with v16's triggers back and no hook, `writer` with the hook.
    static func withPair(_ body: (_ triggers: Database, _ writer: Database) throws -> Void) async throws {
        try await withTemporaryDirectory { dir in
            let (triggers, writer) = try pair(dir)
            defer {
                triggers.close()
                writer.close()
            }
            try body(triggers, writer)
        }
    }

    static func pair(_ dir: String) throws -> (triggers: Database, writer: Database) {
        let triggers = try Database(path: dir + "/triggers.sqlite", create: true, busyTimeoutMs: 1000)
        let writer = try Database(path: dir + "/writer.sqlite", create: true, busyTimeoutMs: 1000)
        for db in [triggers, writer] {
            try Schema.migrate(db)
            let states = ["scheduled", "scheduled", "handed_off", "sent", "scheduled", "suppressed"]
            var rows: [String] = []
            for i in 0..<60 {
                let state = states[i % states.count]
                rows.append("""
                    ('m\(i)', 'b\(i % 2)', 'ios', 'u\(i % 7)', 'c\(i % 3)', 'k\(i)', '\(i % 4 == 0 ? "context_aware" : "traditional")', \
                    \(i % 2), 1, 2, 1, '\(state)', 1, 1, x'', \(state == "handed_off" ? "5" : "NULL"), \(state == "sent" ? "5" : "NULL"), \
                    \(MessageFunnel.atInsert(MessageState(rawValue: state)!) + (state == "handed_off" ? 1 : 0) + (state == "sent" ? 2 : 0)))
                    """)
            }
            try db.execute("""
                INSERT INTO messages(id, bundle_id, platform, user_id, campaign_id, idempotency_key, delivery_method, ab_test,
                                     window_start, window_end, due_at, state, created_at, updated_at, request,
                                     handed_off_at, sent_at, funnel)
                VALUES \(rows.joined(separator: ",\n"));
                INSERT INTO state_counts(state, n) SELECT state, count(*) FROM messages GROUP BY state;
                INSERT INTO campaign_funnel(bundle_id, campaign_id, delivery_method, ab_test, funnel, policy, n)
                SELECT bundle_id, campaign_id, delivery_method, ab_test, funnel, \(policy), count(*) FROM messages
                GROUP BY 1, 2, 3, 4, 5, 6;
                """)
        }
        try undoSchemaV17(triggers)
        writer.messageChanges = try MessageChanges(on: writer)
        return (triggers, writer)
    }

    static let policy = "((deferred_at IS NOT NULL) + 2 * (state = 'suppressed'))"

    /// Every derived row, in a comparable form.
    static func derived(_ db: Database) throws -> [String] {
        var lines: [String] = []
        for (label, sql) in [
            ("count", "SELECT state || '=' || n FROM state_counts WHERE n <> 0 ORDER BY state"),
            ("campaign", """
                SELECT bundle_id || '/' || campaign_id || '/' || delivery_method || '/' || ab_test || '/' || funnel || '/' || policy
                       || '=' || n FROM campaign_funnel WHERE n <> 0 ORDER BY 1
                """),
            ("event", "SELECT kind || ' ' || message_id || ' ' || at || ' ' || coalesce(idempotency_key, '-') FROM events ORDER BY seq"),
            ("funnel", "SELECT id || '=' || funnel FROM messages ORDER BY id"),
        ] {
            let statement = try db.prepare(sql)
            while try statement.step() { lines.append(label + " " + statement.string(0)) }
        }
        return lines
    }

    /// The counts taken from scratch, as `derived` prints them.
    static func recounted(_ db: Database) throws -> [String] {
        var lines: [String] = []
        for sql in [
            "SELECT 'count ' || state || '=' || count(*) FROM messages GROUP BY state ORDER BY state",
            """
            SELECT 'campaign ' || bundle_id || '/' || campaign_id || '/' || delivery_method || '/' || ab_test || '/' || funnel || '/'
                   || \(policy) || '=' || count(*) FROM messages GROUP BY bundle_id, campaign_id, delivery_method, ab_test, funnel,
                   \(policy) ORDER BY 1
            """,
        ] {
            let statement = try db.prepare(sql)
            while try statement.step() { lines.append(statement.string(0)) }
        }
        return lines
    }

    /// Hostile first: multi-row state changes, milestones without their
    /// funnel (fixed by a second write), campaign moves, holds, deletes, a
    /// savepoint rolled back and a transaction rolled back.
    @Test func theWriterLeavesWhatTheTriggersLeft() async throws {
        try await Self.withPair { triggers, writer in
            for db in [triggers, writer] {
                try db.transaction {
                    // Every SCHEDULED message of one campaign cancelled at once (no funnel in the SET: fixed after).
                    let scheduled = try db.scalarInt("SELECT count(*) FROM messages WHERE state = 'scheduled' AND campaign_id = 'c0'")
                    try db.run("UPDATE messages SET state = 'cancelled', updated_at = 10 WHERE state = 'scheduled' AND campaign_id = 'c0'")
                    #expect(Int64(db.changes) == scheduled && scheduled == 10,
                            "changes answers for the caller's statement, not the events and funnels written after it")
                    // Ends as the store writes them (funnel in the SET).
                    for id in ["m1", "m4", "m7"] {
                        try db.run(SQLiteStore.endSQL) {
                            try $0.bind(id, at: 1)
                            try $0.bind("scheduled", at: 2)
                            try $0.bind("sent", at: 3)
                            try $0.bind(nil as Int64?, at: 4)
                            try $0.bind("p-" + id, at: 5)
                            try $0.bind(nil as String?, at: 6)
                            try $0.bind(Int64(11), at: 7)
                        }
                    }
                    // An app's reports: milestones alone.
                    try db.run("UPDATE messages SET displayed_at = 12, opened_at = 13 WHERE state = 'sent'")
                    // A hold, a campaign moved, a cohort changed, two deletes.
                    try db.run("UPDATE messages SET deferred_at = coalesce(deferred_at, 14) WHERE id IN ('m2', 'm8', 'm5')")
                    try db.run("UPDATE messages SET campaign_id = 'moved' WHERE rowid % 5 = 0")
                    try db.run("UPDATE messages SET ab_test = 1 - ab_test, delivery_method = 'traditional' WHERE id IN ('m12', 'm16')")
                    try db.run("DELETE FROM messages WHERE id IN ('m3', 'm9', 'm20')")
                    // A savepoint whose writes are undone.
                    #expect(throws: (any Error).self) {
                        try db.savepoint {
                            try db.run("UPDATE messages SET state = 'failed', updated_at = 15 WHERE campaign_id = 'c1'")
                            try db.run("DELETE FROM messages WHERE campaign_id = 'c2'")
                            try db.run("INSERT INTO messages(id) VALUES (NULL)")  // NOT NULL: fails
                        }
                    }
                    try db.run("UPDATE messages SET state = 'expired', updated_at = 16 WHERE id = 'm10'")
                }
                // A whole transaction rolled back.
                #expect(throws: (any Error).self) {
                    try db.transaction {
                        try db.run("UPDATE messages SET state = 'failed', updated_at = 17")
                        try db.run("INSERT INTO messages(id) VALUES (NULL)")
                    }
                }
            }
            let expected = try Self.derived(triggers)
            #expect(try Self.derived(writer) == expected)
            #expect(expected.contains("event cancelled m0 10 k0"))
            #expect(!expected.contains { $0.hasPrefix("event failed") }, "rolled back")
            let counted = try Self.derived(writer).filter { $0.hasPrefix("count") || $0.hasPrefix("campaign") }
            #expect(counted == (try Self.recounted(writer)))
            #expect(try Self.recounted(triggers) == (try Self.recounted(writer)))
        }
    }

    /// A claim (no watched column) keeps nothing: nothing to read after it.
    @Test func aClaimKeepsNothing() async throws {
        try await Self.withPair { triggers, writer in
            let changes = try #require(writer.messageChanges)
            try writer.run("BEGIN IMMEDIATE")
            try writer.run("UPDATE messages SET sending_since = 5, attempts = attempts + 1, updated_at = 5 WHERE id = 'm0'")
            #expect(!changes.isPending)
            #expect(changes.mark.isEmpty)
            try writer.run("UPDATE messages SET state = 'sent', sent_at = 6, funnel = 2 WHERE id = 'm0'")
            #expect(!changes.isPending, "read after the statement")
            #expect(changes.mark.states == ["scheduled": -1, "sent": 1])
            try writer.beforeCommit()
            try writer.run("COMMIT")
            #expect(changes.mark.isEmpty)
            #expect(try writer.scalarInt("SELECT n FROM state_counts WHERE state = 'sent'") == 11)
        }
    }

    /// A statement run outside a transaction (a hand edit through a
    /// connection with the hook) has its counts written at once.
    @Test func outsideATransactionTheCountsFollowAtOnce() async throws {
        try await Self.withPair { triggers, writer in
            for db in [triggers, writer] {
                try db.execute("UPDATE messages SET state = 'cancelled' WHERE id IN ('m0', 'm1')")
            }
            #expect(try Self.derived(writer) == (try Self.derived(triggers)))
            #expect(writer.messageChanges?.mark.isEmpty == true)
        }
    }
}
