import HeraldCore
public import HeraldStorage
public import Logging
import PostgresNIO
import Synchronization

/// The shared store: PostgreSQL through postgres-nio's connection pool, for
/// any number of Herald replicas on one database (SPEC §4's rules hold
/// across them: see `PostgresSchema` and `HeraldStore`'s design notes).
///
/// Every value goes to the server as a bound parameter (`PostgresQuery`'s
/// interpolation binds; SQL text never holds a value). Every write is one
/// transaction, committed (and so durable, with the server's default
/// `synchronous_commit = on`) before its `await` returns.
public final class PostgresStore: ServableStore {
    public let configuration: PostgresStoreConfiguration
    /// Schedule, claims, ends, devices, operators: `maximumConnections`.
    let client: PostgresClient
    /// The read side (GetMessage, ListMessages, CampaignReport) only:
    /// `readConnections`, each with `statement_timeout` = `readTimeout`, so
    /// reads never take a connection the writes need (docs/SECURITY.md
    /// "Reads and writes").
    let readClient: PostgresClient
    /// Lease renewal and takeover only (`leaseConnections`): a claim's
    /// lease is renewed in time whatever else waits for a connection.
    let leaseClient: PostgresClient

    /// Which of the store's pools a call runs on.
    enum Pool: Sendable {
        case main, reads, leases
    }
    let logger: Logger
    /// The pools' `run()`, owned by the store: cancelled by `close()`
    /// (tests: whether a pool reported late ended later).
    let runner: Task<Void, Never>
    private let closed = Atomic<Bool>(false)
    /// Ends a call whose connection closes under it (postgres-nio#487).
    let closeWatch = ClosedConnectionWatch()
    /// Group commit for Schedule: up to 256 to a transaction, 2 at once (4
    /// made smaller batches on a busy machine: more statements, parses and
    /// commits per Schedule for the same work).
    let scheduleWrites = PostgresBatcher<StoredMessage, ScheduleOutcome>(maximumBatch: 256, maximumInFlight: 2)
    /// Device reads: up to 256 owners to a query, 2 at once.
    let deviceReads = PostgresBatcher<DeviceOwner, [Device]>(maximumBatch: 256, maximumInFlight: 2)
    /// Transitions (a push's end): up to 128 to a transaction, 4 at once.
    let transitionWrites = PostgresBatcher<Transition, Bool>(maximumBatch: 128, maximumInFlight: 4)
    /// The last failure of a write, until one succeeds (`health()`).
    private let lastFailure = Mutex<String?>(nil)

    /// Connects once (a clear error when the server is down or refuses us,
    /// naming the URL without its password), applies the migrations under
    /// the advisory lock, then starts the pool.
    public static func open(
        _ configuration: PostgresStoreConfiguration, logger: Logger = Logger(label: "herald.postgres")
    ) async throws -> PostgresStore {
        let location = configuration.redactedURL
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(
                configuration: try configuration.connectionConfiguration(), id: 0, logger: logger)
        } catch {
            throw StoreError.cannotOpen(path: location, detail: PostgresErrors.describe(error))
        }
        do {
            try await PostgresSchema.migrate(connection, location: location, logger: logger)
        } catch {
            try? await connection.close()
            if let store = error as? StoreError { throw store }
            throw StoreError.cannotOpen(path: location, detail: "migrating the schema: \(PostgresErrors.describe(error))")
        }
        try? await connection.close()
        return PostgresStore(
            configuration: configuration, clientConfiguration: try configuration.clientConfiguration(),
            readConfiguration: try configuration.clientConfiguration(for: .reads),
            leaseConfiguration: try configuration.clientConfiguration(for: .leases), logger: logger)
    }

    private init(
        configuration: PostgresStoreConfiguration, clientConfiguration: PostgresClient.Configuration,
        readConfiguration: PostgresClient.Configuration, leaseConfiguration: PostgresClient.Configuration, logger: Logger
    ) {
        self.configuration = configuration
        self.logger = logger
        let client = PostgresClient(configuration: clientConfiguration, backgroundLogger: logger)
        let readClient = PostgresClient(configuration: readConfiguration, backgroundLogger: logger)
        let leaseClient = PostgresClient(configuration: leaseConfiguration, backgroundLogger: logger)
        self.client = client
        self.readClient = readClient
        self.leaseClient = leaseClient
        // Detached: `PostgresClient.run()` shuts the pool down at a
        // ServiceLifecycle graceful shutdown it inherits through task-locals
        // (SIGTERM under `herald serve`), which closed the pool while
        // delivery was still draining; the store closes it itself (`close()`).
        self.runner = Task.detached {
            await withDiscardingTaskGroup { group in
                for pool in [client, readClient, leaseClient] {
                    group.addTask { await pool.run() }
                }
            }
        }
    }

    /// Closes the pool (its connections end); later calls throw `StoreError.closed`.
    /// Bounded: waits at most `configuration.closeTimeout` for the pool to
    /// end, then logs an error and returns without it (a shutdown must end).
    public func close() async {
        _ = await closeReportingEnd()
    }

    /// `close()`, answering whether the pool ended within the bound (tests
    /// require it; a second call answers true).
    func closeReportingEnd() async -> Bool {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return true }
        let start = ContinuousClock.now
        runner.cancel()
        let ended = await BoundedWait.value(of: runner, atMost: configuration.closeTimeout)
        if !ended {
            logger.error("the PostgreSQL pool did not end within the close timeout: closing without it", metadata: [
                "store": "\(configuration.redactedURL)", "timeout": "\(configuration.closeTimeout)",
            ])
        } else {
            logger.debug("the PostgreSQL pool ended", metadata: ["elapsed": "\(ContinuousClock.now - start)"])
        }
        return ended
    }

    /// The schema version this build writes.
    public static var schemaVersion: Int { PostgresSchema.version }

    // MARK: Plumbing

    /// Runs `body` in one transaction (BEGIN … COMMIT; ROLLBACK when it
    /// throws). A deadlock or serialization failure (the server rolled the
    /// transaction back) runs it again, at most three times in all.
    func transaction<T: Sendable>(
        on pool: Pool = .main, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await recordingFailure {
            try await self.connection(on: pool) { connection in
                try await Self.inTransaction(connection, "BEGIN", logger: self.logger, body)
            }
        }
    }

    /// Runs `body`, one write statement that PostgreSQL commits on its own
    /// (no BEGIN and COMMIT round trips), then waits for that commit: the
    /// protocol commits the implicit transaction at Sync, after the
    /// statement's CommandComplete, where postgres-nio ends the query.
    /// PostgreSQL 15 keeps that answer in its output buffer until it has
    /// committed (it flushes with ReadyForQuery), but the protocol does not
    /// promise it; an empty query on the same connection returns only once
    /// the write is committed (and durable, with the server's
    /// `synchronous_commit`), for one cheap round trip. A failure counts for
    /// `health()` as a transaction's does.
    func autocommit<T: Sendable>(
        on pool: Pool = .main, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await recordingFailure {
            try await self.connection(on: pool) { connection in
                let result = try await body(connection)
                try await connection.query(Self.committed, logger: self.logger)
                return result
            }
        }
    }

    /// The empty query `autocommit` waits for its commit with.
    static let committed = PostgresQuery(unsafeSQL: "")

    /// `body`'s result; a database failure is what `health()` reports until a write succeeds.
    private func recordingFailure<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        do {
            let result = try await body()
            lastFailure.withLock { $0 = nil }
            return result
        } catch let error as StoreError {
            if case .database = error { lastFailure.withLock { $0 = error.description } }
            throw error
        }
    }

    /// Runs `begin`, then `body`, then COMMIT on `connection`; ROLLBACK when
    /// `body` or the commit throws.
    static func inTransaction<T>(
        _ connection: PostgresConnection, _ begin: PostgresQuery, logger: Logger,
        _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await connection.query(begin, logger: logger)
        do {
            let result = try await body(connection)
            try await connection.query("COMMIT", logger: logger)
            return result
        } catch {
            // Not on a closed connection (the server ended it, or the pool
            // closed it): postgres-nio 1.33 writes a query to a closed
            // channel without ever completing it, a wait with no end. The
            // server rolls back what a lost session left open.
            if !connection.isClosed { _ = try? await connection.query("ROLLBACK", logger: logger) }
            throw error
        }
    }

    /// Runs `body` on a connection of `pool`, mapping the driver's errors to
    /// `StoreError`; retries the whole of it after a deadlock or a
    /// serialization failure. On the read pool, a statement stopped by its
    /// `statement_timeout` is `StoreError.readTimedOut`.
    func connection<T: Sendable>(
        on pool: Pool = .main, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        let client = switch pool {
        case .main: self.client
        case .reads: readClient
        case .leases: leaseClient
        }
        var attempt = 1
        while true {
            guard !closed.load(ordering: .acquiring) else { throw StoreError.closed }
            do {
                return try await client.withConnection { connection in try await self.closeWatch.run(connection, body) }
            } catch let error as StoreError {
                throw error
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                // The pool refuses a lease for a cancelled task: nothing ran.
                if Task.isCancelled { throw CancellationError() }
                if attempt < 3, let state = PostgresErrors.sqlState(error), state == "40P01" || state == "40001" {
                    attempt += 1
                    continue
                }
                // A pooled connection the server had closed (terminated,
                // restarted) fails before anything is sent: safe to run again
                // on a new one.
                if attempt < 3, error is ClosedConnectionWatch.ClosedBeforeUse
                    || (error as? PSQLError)?.code == .clientClosedConnection {
                    attempt += 1
                    continue
                }
                if closed.load(ordering: .acquiring) { throw StoreError.closed }
                if pool == .reads, PostgresErrors.sqlState(error) == "57014" {
                    throw StoreError.readTimedOut(limit: configuration.readTimeout)
                }
                throw StoreError.database(PostgresErrors.describe(error))
            }
        }
    }

    /// Every row of `query`, decoded by `decode`.
    static func rows<T>(
        _ connection: PostgresConnection, _ query: PostgresQuery, logger: Logger,
        _ decode: (PostgresRow) throws -> T
    ) async throws -> [T] {
        var result: [T] = []
        for try await row in try await connection.query(query, logger: logger) {
            result.append(try decode(row))
        }
        return result
    }

    /// The first row of `query`, if any.
    static func first<T>(
        _ connection: PostgresConnection, _ query: PostgresQuery, logger: Logger,
        _ decode: (PostgresRow) throws -> T
    ) async throws -> T? {
        try await rows(connection, query, logger: logger, decode).first
    }

    /// Runs `query` (a write ending in `RETURNING 1`) and returns how many
    /// rows it returned: the rows it changed.
    static func run(_ connection: PostgresConnection, _ query: PostgresQuery, logger: Logger) async throws -> Int {
        var count = 0
        for try await _ in try await connection.query(query, logger: logger) { count += 1 }
        return count
    }

    // MARK: Operators

    /// Writable: connected to a primary (not a standby in recovery) whose
    /// transactions are not read-only. Writes nothing.
    public func probeWrite() async throws {
        let writable = try await connection { connection in
            try await Self.first(connection, """
                SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off'
                """, logger: self.logger) { try $0.decode(Bool.self) }
        }
        guard writable == true else {
            throw StoreError.readOnly(path: configuration.redactedURL, detail: "the server is read-only (a standby, or default_transaction_read_only)")
        }
    }

    public func health() async -> StoreHealth {
        let location = configuration.redactedURL
        do {
            _ = try await connection { connection in
                try await Self.first(connection, "SELECT 1", logger: self.logger) { try $0.decode(Int32.self) }
            }
            let failure = lastFailure.withLock { $0 }
            return StoreHealth(kind: "postgres", location: location, ok: failure == nil, lastError: failure)
        } catch {
            return StoreHealth(kind: "postgres", location: location, ok: false, lastError: String(describing: error))
        }
    }
}
