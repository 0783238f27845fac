import Foundation
import HeraldCore
@testable import HeraldPostgres
import HeraldTestSupport
import Logging
import PostgresNIO
import Testing
@testable import HeraldStorage

/// The stores the semantics tests run against: one suite, both stores.
enum StoreKind: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case sqlite, postgres

    /// SQLite always; PostgreSQL when `HERALD_TEST_POSTGRES_URL` is set, or
    /// when `CI=true` (where a missing URL then fails instead of skipping).
    static var all: [StoreKind] { PostgresTestDatabase.isEnabled ? [.sqlite, .postgres] : [.sqlite] }

    var testDescription: String { rawValue }
}

/// What the shared tests need of a store beyond `ServableStore`.
protocol TestStore: ServableStore {
    /// Seeds messages (and their keys) without last-request-wins checks.
    func importMessages(_ messages: [StoredMessage]) async throws
}

extension SQLiteStore: TestStore {}
extension PostgresStore: TestStore {}

/// Opens a store of `kind` on a fresh database (SQLite: a temporary
/// directory; PostgreSQL: a new schema, dropped after) and closes it.
func withStore<T>(_ kind: StoreKind, _ body: (any TestStore) async throws -> T) async throws -> T {
    switch kind {
    case .sqlite:
        return try await withStore { store, _ in try await body(store) }
    case .postgres:
        return try await PostgresTestDatabase.withSchema { configuration in
            let store = try await PostgresStore.open(configuration)
            do {
                let result = try await body(store)
                await store.close()
                return result
            } catch {
                await store.close()
                throw error
            }
        }
    }
}

/// The throwaway cluster of `scripts/pg-test-cluster.sh`, through
/// `HERALD_TEST_POSTGRES_URL`.
enum PostgresTestDatabase {
    static let url: String? = ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    static let required = ProcessInfo.processInfo.environment["CI"] == "true"
    /// Opt-in for now (`HERALD_TEST_POSTGRES_SWIFT=1` with the URL): run
    /// beside every other suite, the PostgreSQL cases stalled past their
    /// time limits (pools waiting on the cooperative pool; to investigate).
    /// Run alone (`swift test --filter HeraldStorageTests`) they pass.
    static var isEnabled: Bool {
        ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES_SWIFT"] == "1" && (url != nil || required)
    }
    static let skipReason: Comment = """
        HERALD_TEST_POSTGRES_URL is not set: the PostgreSQL store tests skip \
        (scripts/test.sh starts a throwaway cluster and sets it)
        """

    struct Missing: Error, CustomStringConvertible {
        var description: String { "CI=true but HERALD_TEST_POSTGRES_URL is not set: the PostgreSQL tests cannot run" }
    }

    static func configuration(schema: String? = nil) throws -> PostgresStoreConfiguration {
        guard let url else { throw Missing() }
        var configuration = try PostgresStoreConfiguration(url: url, replicaID: "test")
        configuration.schema = schema
        configuration.maximumConnections = 8
        return configuration
    }

    /// One PostgreSQL case at a time: many pools opened at once by the
    /// parallel suites stalled the run (under investigation).
    static let gate = Gate()

    actor Gate {
        private var busy = false
        private var waiters: [CheckedContinuation<Void, Never>] = []

        func enter() async {
            if !busy { busy = true; return }
            await withCheckedContinuation { waiters.append($0) }
        }

        func leave() {
            if waiters.isEmpty { busy = false } else { waiters.removeFirst().resume() }
        }
    }

    /// Runs `body` against a new schema of the test database, dropped after.
    static func withSchema<T>(_ body: (PostgresStoreConfiguration) async throws -> T) async throws -> T {
        await gate.enter()
        do {
            let result = try await withSchemaUngated(body)
            await gate.leave()
            return result
        } catch {
            await gate.leave()
            throw error
        }
    }

    private static func withSchemaUngated<T>(_ body: (PostgresStoreConfiguration) async throws -> T) async throws -> T {
        let schema = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try await admin("CREATE SCHEMA \(schema)")
        do {
            let result = try await body(try configuration(schema: schema))
            try await admin("DROP SCHEMA \(schema) CASCADE")
            return result
        } catch {
            try? await admin("DROP SCHEMA \(schema) CASCADE")
            throw error
        }
    }

    /// Runs one statement (test-made text, no outside values) on its own connection.
    static func admin(_ sql: String) async throws {
        let connection = try await PostgresConnection.connect(
            configuration: try configuration().connectionConfiguration(), id: 1, logger: Logger(label: "test"))
        do {
            try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Logger(label: "test"))
            try await connection.close()
        } catch {
            try? await connection.close()
            throw error
        }
    }
}
