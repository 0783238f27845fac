import Foundation
import HeraldCore
@testable import HeraldPostgres
import HeraldTestSupport
import Logging
import PostgresNIO
import Testing
@testable import HeraldStorage

/// The stores the store contract suite (this folder) runs against: SQLite,
/// PostgreSQL and the in-memory store the service tests use. Each kind says
/// what it cannot do (`survivesRestart`, `sharesDue`, `hasReadSide`); a case
/// that needs it runs on the kinds that can (`restartable`, `shared`,
/// `durable`), and `ContractKindsTests` pins what each kind is excused from,
/// so nothing is left out silently.
enum StoreKind: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case sqlite, postgres, memory

    /// SQLite and the in-memory store always; PostgreSQL when
    /// `HERALD_TEST_POSTGRES_URL` is set, or when `CI=true` (where a missing
    /// URL then fails instead of skipping).
    static var all: [StoreKind] { allCases.filter { $0 != .postgres || PostgresTestDatabase.isEnabled } }

    /// The stores Herald serves from (`ServableStore`: read side, probes).
    static var durable: [StoreKind] { all.filter(\.hasReadSide) }

    /// The kinds whose state outlives the store (re-opened after an unclean stop).
    static var restartable: [StoreKind] { all.filter(\.survivesRestart) }

    /// The kinds shared by replicas (`SharedDueStore`: leases).
    static var shared: [StoreKind] { all.filter(\.sharesDue) }

    /// False for the in-memory store: a process that stops loses it all.
    /// Its crash-rule cases run `recoverInterrupted` on the same instance
    /// instead of a re-opened one (`withRestartableStore`).
    var survivesRestart: Bool { self != .memory }

    /// Whether claims are leased to a replica (`SharedDueStore`): PostgreSQL,
    /// and the in-memory store that stands in for it in the polling
    /// scheduler's tests. SQLite's claims belong to its one process (the data
    /// directory lock), resolved by `recoverInterrupted` at start.
    var sharesDue: Bool { self != .sqlite }

    /// False for the in-memory store: it has no read side (GetMessage,
    /// ListMessages, CampaignReport) and no probes; no service test reads
    /// through it.
    var hasReadSide: Bool { self != .memory }

    var testDescription: String { rawValue }
}

/// What the contract needs of a store beyond `HeraldStore`: the one Schedule
/// path (`CallbackScheduling`), retention, the policy ledger
/// (`PolicyLedger`), seeding and closing. All three kinds conform.
protocol ContractStore: CallbackScheduling, FinishedMessagePruning, PolicyLedger {
    /// Seeds messages (and their keys) without last-request-wins checks.
    func importMessages(_ messages: [StoredMessage]) async throws

    func close() async
}

/// What the read-side tests need: a servable store (SQLite, PostgreSQL).
protocol TestStore: ContractStore, ServableStore {}

extension SQLiteStore: TestStore {}
extension PostgresStore: TestStore {}
extension InMemoryStore: ContractStore {}

/// Opens a store of `kind` on a fresh database (SQLite: a temporary
/// directory; PostgreSQL: a new schema, dropped after; memory: a new one)
/// and closes it.
func withStore<T>(_ kind: StoreKind, _ body: (any ContractStore) async throws -> T) async throws -> T {
    switch kind {
    case .sqlite, .postgres:
        return try await withServableStore(kind) { try await body($0) }
    case .memory:
        let store = InMemoryStore()
        let result = try await body(store)
        await store.close()
        return result
    }
}

/// `withStore` for the read side: SQLite or PostgreSQL (`StoreKind.durable`).
func withServableStore<T>(_ kind: StoreKind, _ body: (any TestStore) async throws -> T) async throws -> T {
    switch kind {
    case .sqlite:
        return try await withStore { store, _ in try await body(store) }
    case .postgres:
        return try await PostgresTestDatabase.withSchema { configuration in
            let store = try await PostgresStore.open(configuration)
            // Every case's pool must end within the bound. The pool that
            // "outlasted the bound" after ordinary cases (issue 13's note)
            // had ended: BoundedWait's timer answered for it (fixed).
            do {
                let result = try await body(store)
                await closeInTime(store)
                return result
            } catch {
                await closeInTime(store)
                throw error
            }
        }
    case .memory:
        preconditionFailure("the in-memory store has no read side: use StoreKind.durable")
    }
}

/// Opens a store of `kind` and hands `body` the store and a `restart` that
/// closes it with whatever it holds (claims open, pushes half handed over:
/// what a kill -9 leaves in the database, the writes being durable when
/// they returned) and opens the same database again, as a restarted
/// process would. The in-memory store cannot survive a restart
/// (`survivesRestart`): its `restart` returns the same instance, so its
/// cases check the crash rule that a restart runs, not durability.
func withRestartableStore<T>(
    _ kind: StoreKind, _ body: (any ContractStore, _ restart: () async throws -> any ContractStore) async throws -> T
) async throws -> T {
    switch kind {
    case .sqlite:
        return try await withTemporaryDirectory { dir in
            let path = dir + "/crash.sqlite"
            var current = try SQLiteStore(path: path)
            do {
                let result = try await body(current) {
                    await current.close()
                    current = try SQLiteStore(path: path)
                    return current
                }
                await current.close()
                return result
            } catch {
                await current.close()
                throw error
            }
        }
    case .postgres:
        return try await PostgresTestDatabase.withSchema { configuration in
            var current = try await PostgresStore.open(configuration)
            do {
                let result = try await body(current) {
                    await closeInTime(current)
                    current = try await PostgresStore.open(configuration)
                    return current
                }
                await closeInTime(current)
                return result
            } catch {
                await closeInTime(current)
                throw error
            }
        }
    case .memory:
        let store = InMemoryStore()
        return try await body(store) { store }
    }
}

extension Trait where Self == TimeLimitTrait {
    /// The time limit of a suite with PostgreSQL cases. Swift Testing counts
    /// a case's wait for `PostgresTestDatabase.gate` in it, and every
    /// PostgreSQL case of the run starts at once: on a CI machine slower
    /// than ours the last in the queue waited past one minute (stop 33).
    /// The limit catches a hung case; the queue is bounded by the whole
    /// run (about 90 s there), far below it.
    static var storeCaseLimit: Self { .timeLimit(.minutes(5)) }
}

/// The throwaway cluster of `scripts/pg-test-cluster.sh`, through
/// `HERALD_TEST_POSTGRES_URL`.
enum PostgresTestDatabase {
    static let url: String? = ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    static let required = ProcessInfo.processInfo.environment["CI"] == "true"
    /// With the URL, or when `CI=true` (where a missing URL then fails instead of skipping).
    static var isEnabled: Bool { url != nil || required }
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
        // The product's 10 s is for an operator's shutdown; on a CI machine
        // with builds beside it a pool once took longer to end after an
        // ordinary case. A pool that never ends still fails its case.
        configuration.closeTimeout = .seconds(30)
        return configuration
    }

    /// At most this many PostgreSQL cases at once (each opens up to
    /// `maximumConnections` per store, some two stores): the parallel suites
    /// stay far below the cluster's `max_connections` (600). A case's wait
    /// here counts toward its time limit (`storeCaseLimit`).
    static let gate = Gate(capacity: 8)

    /// A counting semaphore whose waiters leave when their task is cancelled
    /// (a case past its time limit must end, not keep its place for good).
    actor Gate {
        private let capacity: Int
        private var inside = 0
        private var waiters: [(id: Int, continuation: CheckedContinuation<Void, any Error>)] = []
        private var nextID = 0

        init(capacity: Int) { self.capacity = capacity }

        func enter() async throws {
            if inside < capacity {
                inside += 1
                return
            }
            let id = nextID
            nextID += 1
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    if Task.isCancelled {
                        continuation.resume(throwing: CancellationError())
                    } else {
                        waiters.append((id, continuation))
                    }
                }
            } onCancel: {
                Task { await self.cancel(id) }
            }
        }

        /// Hands the place to the first waiter, if any.
        func leave() {
            if waiters.isEmpty {
                inside -= 1
            } else {
                waiters.removeFirst().continuation.resume()
            }
        }

        private func cancel(_ id: Int) {
            guard let index = waiters.firstIndex(where: { $0.id == id }) else { return }
            waiters.remove(at: index).continuation.resume(throwing: CancellationError())
        }
    }

    /// Runs `body` against a new schema of the test database, dropped after.
    static func withSchema<T>(_ body: (PostgresStoreConfiguration) async throws -> T) async throws -> T {
        try await gate.enter()
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
        try await run([sql], on: configuration())
    }

    /// Runs `statements` (test-made text, no outside values) in order on one
    /// new connection of `configuration` (its search_path is the test's
    /// schema, when it has one), then closes it.
    static func run(_ statements: [String], on configuration: PostgresStoreConfiguration) async throws {
        let logger = Logger(label: "test")
        let connection = try await PostgresConnection.connect(
            configuration: try configuration.connectionConfiguration(), id: 1, logger: logger)
        do {
            for statement in statements {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            try await connection.close()
        } catch {
            try? await connection.close()
            throw error
        }
    }
}

/// Closes `store`, recording an issue when its pool did not end within the
/// close timeout (`close()` then returns without it; a test must see that).
func closeInTime(_ store: PostgresStore, sourceLocation: SourceLocation = #_sourceLocation) async {
    let ended = await store.closeReportingEnd()
    #expect(ended, "the PostgreSQL pool did not end within \(store.configuration.closeTimeout) of close()",
            sourceLocation: sourceLocation)
}
