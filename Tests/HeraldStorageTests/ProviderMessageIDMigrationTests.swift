import Foundation
import HeraldCore
@testable import HeraldPostgres
import HeraldTestSupport
import Testing
@testable import HeraldStorage

/// Issue 25 item 2: the provider's id of an accepted push (the apns-id, the
/// FCM message name) is a provider message id. A store written before the
/// rename (SQLite v7, PostgreSQL v4: column `apns_id`) opens with every
/// value kept, NULLs included, under `provider_message_id`.
@Suite("Provider message id migration (SQLite v7 → v8, PostgreSQL v4 → v5)", .storeCaseLimit)
struct ProviderMessageIDMigrationTests {
    static let fcmName = "projects/herald-sim/messages/0:1800000000000%31bd1c9631bd1c96"
    static let apnsID = "123e4567-e89b-12d3-a456-426614174000"

    /// Writes the rows a build before the rename would have: an Android
    /// message SENT with its FCM name, its two devices (one accepted, one
    /// refused: no id), and an iOS message with its apns-id.
    static func seed(_ store: any TestStore) async throws {
        var android = makeMessage(id: "m-android", platform: .android, key: "k-android", state: .sent)
        android.providerMessageID = fcmName
        var ios = makeMessage(id: "m-ios", key: "k-ios", state: .sent)
        ios.providerMessageID = apnsID
        try await store.importMessages([android, ios, makeMessage(id: "m-none", key: "k-none")])
        try await store.recordOutcome(DeviceOutcome(
            messageID: "m-android", deviceToken: "fcm-1", kind: .sent, providerMessageID: fcmName, at: now + 1))
        try await store.recordOutcome(DeviceOutcome(
            messageID: "m-android", deviceToken: "fcm-2", kind: .unregistered, reason: "UNREGISTERED", at: now + 2))
        try await store.recordOutcome(DeviceOutcome(
            messageID: "m-ios", deviceToken: "aa", kind: .sent, providerMessageID: apnsID, at: now + 3))
    }

    /// What the migrated store must still say.
    static func expectKept(_ store: any TestStore) async throws {
        #expect(try await store.message(id: "m-android")?.providerMessageID == fcmName)
        #expect(try await store.message(id: "m-ios")?.providerMessageID == apnsID)
        #expect(try await store.message(id: "m-none")?.providerMessageID == nil)
        let android = try await store.outcomes(messageID: "m-android").sorted { $0.at < $1.at }
        #expect(android.map(\.providerMessageID) == [fcmName, nil])
        #expect(try await store.outcomes(messageID: "m-ios").map(\.providerMessageID) == [apnsID])
    }

    @Test func aVersion7SQLiteDatabaseKeepsEveryIDUnderTheNewName() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/v7.sqlite"
            do {
                let store = try SQLiteStore(path: path)
                try await Self.seed(store)
                await store.close()
                // Back to what a v7 build wrote: the columns under their old name.
                let db = try Database(path: path, create: false, busyTimeoutMs: 1000)
                // v9 added the delivery policy's columns; a v7 database has none.
                try undoSchemaV10(db)
                try db.execute("ALTER TABLE messages RENAME COLUMN provider_message_id TO apns_id")
                try db.execute("ALTER TABLE outcomes RENAME COLUMN provider_message_id TO apns_id")
                try db.execute("PRAGMA user_version = 7")
                db.close()
            }
            let store = try SQLiteStore(path: path)
            #expect(try userVersion(path) == SQLiteStore.schemaVersion)
            // The rename is step 8 (later steps run after it).
            #expect(SQLiteStore.schemaVersion >= 8 && Schema.migrations[7] == SchemaV8.sql)
            try await Self.expectKept(store)
            // New writes land in the renamed column.
            try await store.recordOutcome(DeviceOutcome(
                messageID: "m-none", deviceToken: "bb", kind: .sent, providerMessageID: "new", at: now + 4))
            #expect(try await store.outcomes(messageID: "m-none").map(\.providerMessageID) == ["new"])
            await store.close()
            let db = try Database(path: path, create: false, busyTimeoutMs: 1000)
            defer { db.close() }
            #expect(try db.scalarInt("SELECT count(*) FROM pragma_table_info('outcomes') WHERE name = 'apns_id'") == 0)
            #expect(try db.scalarInt("SELECT count(*) FROM pragma_table_info('messages') WHERE name = 'provider_message_id'") == 1)
        }
    }

    @Test(.enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
    func aVersion4PostgresDatabaseKeepsEveryIDUnderTheNewName() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            let store = try await PostgresStore.open(configuration)
            try await Self.seed(store)
            await closeInTime(store)
            // Back to what a v4 build wrote: the columns under their old name.
            try await PostgresTestDatabase.run([
                "ALTER TABLE messages RENAME COLUMN provider_message_id TO apns_id",
                "ALTER TABLE outcomes RENAME COLUMN provider_message_id TO apns_id",
                // Step 5 and any later one (they re-run over their own tables).
                "DELETE FROM herald_schema WHERE version >= 5",
            ], on: configuration)
            #expect(PostgresSchema.version >= 5 && PostgresSchema.migrations[4] == PostgresSchema.v5)
            let reopened = try await PostgresStore.open(configuration)
            try await Self.expectKept(reopened)
            await closeInTime(reopened)
        }
    }
}
