import Foundation
import HeraldCore
@testable import HeraldPostgres
import HeraldTestSupport
import Testing
@testable import HeraldStorage

/// Back to what a build before schema v12 wrote: no delivery event log.
func undoSchemaV12(_ db: Database) throws {
    try undoSchemaV13(db)
    for trigger in ["events_message_state", "events_message_opened", "events_message_deferred",
                    "events_outcome"] {
        try db.execute("DROP TRIGGER \(trigger)")
    }
    try db.execute("DROP TABLE events")
    try db.execute("DROP TABLE event_horizon")
}

/// `CREATE TRIGGER name … END;` as `sql` (a shipped migration) has it.
func triggerSQL(_ name: String, in sql: String) -> String {
    let trigger = sql[sql.range(of: "CREATE TRIGGER \(name)")!.lowerBound...]
    return String(trigger[..<trigger.range(of: "END;")!.upperBound])
}

/// Back to what a build before schema v17 wrote: the triggers keeping the
/// counts, the state events and the funnel (the writer's `MessageChanges`
/// since).
func undoSchemaV17(_ db: Database) throws {
    for (name, sql) in [("messages_count_update", Schema.v1), ("messages_count_delete", Schema.v1),
                        ("events_message_state", SchemaV12.sql), ("messages_funnel_update", SchemaV13.sql),
                        ("campaign_funnel_update", SchemaV14.sql), ("campaign_funnel_delete", SchemaV14.sql)] {
        try db.execute(triggerSQL(name, in: sql))
    }
}

/// Back to what a build before schema v16 wrote: v12's trigger appending
/// an outcome's event.
func undoSchemaV16(_ db: Database) throws {
    try undoSchemaV17(db)
    try db.execute(triggerSQL("events_outcome", in: SchemaV12.sql))
}

/// Back to what a build before schema v15 wrote: v10's `messages_policy`,
/// which follows `state`, and no `suppressed_at`.
func undoSchemaV15(_ db: Database) throws {
    try undoSchemaV16(db)
    try db.execute("""
        DROP INDEX messages_policy;
        ALTER TABLE messages DROP COLUMN suppressed_at;
        CREATE INDEX messages_policy ON messages(bundle_id, campaign_id, created_at)
            WHERE deferred_at IS NOT NULL OR state = 'suppressed';
        """)
}

/// Back to what a build before schema v14 wrote: no campaign counts.
func undoSchemaV14(_ db: Database) throws {
    try undoSchemaV15(db)
    for trigger in ["campaign_funnel_delete", "campaign_funnel_update"] {
        try db.execute("DROP TRIGGER \(trigger)")
    }
    try db.execute("DROP TABLE campaign_funnel")
}

/// Back to what a build before schema v13 wrote: v4's unguarded funnel trigger.
func undoSchemaV13(_ db: Database) throws {
    try undoSchemaV14(db)
    try db.execute("""
        DROP TRIGGER messages_funnel_update;
        CREATE TRIGGER messages_funnel_update
            AFTER UPDATE OF state, handed_off_at, sent_at, displayed_at, opened_at ON messages BEGIN
            UPDATE messages SET funnel = \(MessageFunnel.expression("NEW.")) WHERE rowid = NEW.rowid;
        END;
        """)
}

/// Back to what a PostgreSQL build before schema v9 wrote: no delivery
/// event log (its `deferred_at` trigger would keep v7's column).
let undoPostgresSchemaV9 = [
    "DROP TRIGGER events_messages_inserted ON messages", "DROP TRIGGER events_outcomes_inserted ON outcomes",
    "DROP TRIGGER events_message_state ON messages", "DROP TRIGGER events_message_opened ON messages",
    "DROP TRIGGER events_message_deferred ON messages", "DROP FUNCTION herald_events_messages_inserted()",
    "DROP FUNCTION herald_events_outcomes_inserted()", "DROP FUNCTION herald_events_message_changed()",
    "DROP TABLE events", "DROP TABLE event_horizon", "DROP SEQUENCE events_seq",
]

/// Back to what a build before schema v11 wrote: no `messages.transactional`
/// (nor v12's event log).
func undoSchemaV11(_ db: Database) throws {
    try undoSchemaV12(db)
    try db.execute("ALTER TABLE messages DROP COLUMN transactional")
}

/// Back to what a build before schema v10 (the delivery policy's outcomes) wrote: no
/// `not_before`, no `deferred_at`, no `messages_policy` (nor v11's column).
/// For tests that roll a current database back to an older version.
func undoSchemaV10(_ db: Database) throws {
    try undoSchemaV11(db)
    try db.execute("DROP INDEX messages_policy")
    try db.execute("ALTER TABLE outcomes DROP COLUMN not_before")
    try db.execute("ALTER TABLE messages DROP COLUMN deferred_at")
}

/// Issue 26: a store written before the delivery policy's columns (SQLite
/// v9, PostgreSQL v6) opens with every row kept (its outcomes read with no
/// `notBefore`), and then holds, reads back WAITING devices and counts
/// deferred messages like a new one.
@Suite("Delivery policy migration (SQLite v9 → v10 → v11, PostgreSQL v6 → v7 → v8)", .storeCaseLimit)
struct DeliveryPolicyMigrationTests {
    /// What a build before the policy wrote: a SENT message with its outcome, a SCHEDULED one.
    static func seed(_ store: any TestStore) async throws {
        try await store.importMessages([makeMessage(id: "m-sent", key: "k-sent", state: .sent), makeMessage(id: "m-due", key: "k-due")])
        try await store.recordOutcome(DeviceOutcome(messageID: "m-sent", deviceToken: "aa", kind: .sent, providerMessageID: "p", at: now + 1))
    }

    /// What the migrated store must say and do.
    static func expectMigrated(_ store: any TestStore) async throws {
        let old = try await store.outcomes(messageID: "m-sent")
        #expect(old.map(\.kind) == [.sent] && old.map(\.notBefore) == [nil] && old.map(\.providerMessageID) == ["p"])
        _ = try #require(try await store.claim(id: "m-due", from: .scheduled, now: now + 2))
        #expect(try await store.hold(id: "m-due", from: .scheduled, now: now + 3, recording: [
            DeviceOutcome(messageID: "m-due", deviceToken: "bb", kind: .waiting, reason: "quiet_hours", at: now + 3, notBefore: now + 9_000),
        ]))
        let detail = try #require(try await store.messageDetail(bundleID: "com.example.app", messageID: "m-due"))
        #expect(detail.outcomes.map(\.notBefore) == [now + 9_000])
        #expect(detail.message.dueAt == now + 9_000)
        let counts = try await store.campaignCounts(bundleID: "com.example.app", campaignID: "welcome", createdFrom: nil, createdBefore: nil)
        #expect(counts.map(\.deferred).reduce(0, +) == 1)
    }

    @Test func aVersion9SQLiteDatabaseGetsThePolicyColumns() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/v9.sqlite"
            do {
                let store = try SQLiteStore(path: path)
                try await Self.seed(store)
                await store.close()
                let db = try Database(path: path, create: false, busyTimeoutMs: 1000)
                try undoSchemaV10(db)
                try db.execute("PRAGMA user_version = 9")
                db.close()
            }
            let store = try SQLiteStore(path: path)
            #expect(try userVersion(path) == SQLiteStore.schemaVersion)
            try await Self.expectMigrated(store)
            await store.close()
            let db = try Database(path: path, create: false, busyTimeoutMs: 1000)
            defer { db.close() }
            #expect(try db.scalarInt("SELECT count(*) FROM pragma_table_info('outcomes') WHERE name = 'not_before'") == 1)
            #expect(try db.scalarInt("SELECT count(*) FROM pragma_table_info('messages') WHERE name = 'deferred_at'") == 1)
            #expect(try db.scalarInt("SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 'messages_policy'") == 1)
        }
    }

    @Test(.enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
    func aVersion6PostgresDatabaseGetsThePolicyColumns() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            let store = try await PostgresStore.open(configuration)
            try await Self.seed(store)
            await closeInTime(store)
            try await PostgresTestDatabase.run(undoPostgresSchemaV9 + [
                "DROP INDEX messages_policy",
                "ALTER TABLE outcomes DROP COLUMN not_before",
                "ALTER TABLE messages DROP COLUMN deferred_at",
                "DELETE FROM herald_schema WHERE version >= 7",
            ], on: configuration)
            let reopened = try await PostgresStore.open(configuration)
            try await Self.expectMigrated(reopened)
            await closeInTime(reopened)
        }
    }

    /// Schema v11 / PostgreSQL v8 (fair claims): a store written before
    /// `transactional` opens with its rows read as not transactional, and
    /// then keeps the flag of a new message (the rebuild's urgent slot and
    /// PostgreSQL's claim order read it).
    static func expectTransactionalKept(_ store: any TestStore) async throws {
        #expect(try await store.message(id: "m-due")?.transactional == false)
        var urgent = makeMessage(id: "m-urgent", key: "k-urgent")
        urgent.transactional = true
        try await store.importMessages([urgent])
        #expect(try await store.message(id: "m-urgent")?.transactional == true)
        let pending = try await store.pending(after: nil, limit: 10)
        #expect(Dictionary(uniqueKeysWithValues: pending.map { ($0.id, $0.transactional) }) == ["m-due": false, "m-urgent": true])
    }

    @Test func aVersion10SQLiteDatabaseGetsTheTransactionalColumn() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/v10.sqlite"
            do {
                let store = try SQLiteStore(path: path)
                try await Self.seed(store)
                await store.close()
                let db = try Database(path: path, create: false, busyTimeoutMs: 1000)
                try undoSchemaV11(db)
                try db.execute("PRAGMA user_version = 10")
                db.close()
            }
            let store = try SQLiteStore(path: path)
            #expect(try userVersion(path) == SQLiteStore.schemaVersion)
            try await Self.expectTransactionalKept(store)
            await store.close()
        }
    }

    @Test(.enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
    func aVersion7PostgresDatabaseGetsTheFairClaimIndex() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            let store = try await PostgresStore.open(configuration)
            try await Self.seed(store)
            await closeInTime(store)
            try await PostgresTestDatabase.run(undoPostgresSchemaV9 + [
                "DROP INDEX messages_due_lanes",
                "ALTER TABLE messages DROP COLUMN transactional",
                "DELETE FROM herald_schema WHERE version >= 8",
            ], on: configuration)
            let reopened = try await PostgresStore.open(configuration)
            try await Self.expectTransactionalKept(reopened)
            #expect(try await PostgresStoreTests.scalar(configuration, """
                SELECT count(*)::text FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'messages_due_lanes'
                """) == "1")
            await closeInTime(reopened)
        }
    }
}
