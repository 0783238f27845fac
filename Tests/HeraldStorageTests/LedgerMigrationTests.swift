import Foundation
import HeraldCore
@testable import HeraldPostgres
import HeraldTestSupport
import Testing
@testable import HeraldStorage

/// Issue 26's ledger step (SQLite v8 → v9, PostgreSQL v5 → v6): a store
/// written by the previous build opens with its messages kept and the
/// ledger (and PostgreSQL's throttle) ready.
@Suite("Policy ledger migration (SQLite v8 → v9, PostgreSQL v5 → v6)", .storeCaseLimit)
struct LedgerMigrationTests {
    static let one = [CapLimit(count: 1, periodMilliseconds: 3_600_000)]

    @Test func aVersion8SQLiteDatabaseGainsTheLedger() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/v8.sqlite"
            do {
                let store = try SQLiteStore(path: path)
                try await store.importMessages([makeMessage(id: "m-kept", key: "k-kept")])
                await store.close()
                // Back to what a v8 build wrote: no ledger (v9), no policy outcomes (v10).
                let db = try Database(path: path, create: false, busyTimeoutMs: 1000)
                try undoSchemaV10(db)
                try db.execute("DROP TABLE counted_sends")
                try db.execute("PRAGMA user_version = 8")
                db.close()
            }
            let store = try SQLiteStore(path: path)
            #expect(try userVersion(path) == SQLiteStore.schemaVersion)
            #expect(Schema.migrations[8] == SchemaV9.sql)
            #expect(try await store.message(id: "m-kept")?.state == .scheduled)
            #expect(try await store.reserveCountedSend(LedgerContractTests.reservation("m1", at: now, caps: Self.one)) == .reserved(at: now))
            #expect(try await store.reserveCountedSend(LedgerContractTests.reservation("m2", at: now, caps: Self.one))
                    == .heldUntil(now + 3_600_000))
            await store.close()
        }
    }

    @Test(.enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
    func aVersion5PostgresDatabaseGainsTheLedgerAndTheThrottle() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            let store = try await PostgresStore.open(configuration)
            try await store.importMessages([makeMessage(id: "m-kept", key: "k-kept")])
            await closeInTime(store)
            // Back to what a v5 build wrote.
            try await PostgresTestDatabase.run([
                "DROP TABLE counted_sends", "DROP TABLE throttle_slots", "DELETE FROM herald_schema WHERE version >= 6",
            ], on: configuration)
            #expect(PostgresSchema.migrations[5] == PostgresSchema.v6)
            let reopened = try await PostgresStore.open(configuration)
            #expect(try await PostgresStoreTests.scalar(configuration, "SELECT max(version)::text FROM herald_schema")
                    == "\(PostgresStore.schemaVersion)")
            #expect(try await reopened.message(id: "m-kept")?.state == .scheduled)
            #expect(try await reopened.reserveCountedSend(LedgerContractTests.reservation("m1", at: now, caps: Self.one)) == .reserved(at: now))
            #expect(try await reopened.takeThrottleSlots(bundleID: "com.example.app", ratePerSecond: 10, count: 2, now: now).count == 2)
            await closeInTime(reopened)
        }
    }
}
