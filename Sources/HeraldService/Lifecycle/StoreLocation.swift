public import HeraldPostgres
import HeraldPrimitives
import HeraldStorage
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Which store Herald serves from (`herald serve --store`).
public enum StoreLocation: Sendable, Hashable, CustomStringConvertible {
    /// The embedded store: one SQLite file, one process (the data
    /// directory's lock keeps a second one out).
    case sqlite(path: String)
    /// A shared PostgreSQL database; replicas may share it.
    case postgres(PostgresStoreConfiguration)

    /// Parses `sqlite:PATH` or `postgres://…` / `postgresql://…` (see
    /// `PostgresStoreConfiguration`); the message of a refusal never holds
    /// the password.
    public static func parse(_ text: String, replicaID: String = defaultReplicaID()) throws(ConfigurationError) -> StoreLocation {
        if text.hasPrefix("sqlite:") {
            let path = String(text.dropFirst("sqlite:".count))
            guard !path.isEmpty else { throw ConfigurationError(description: "sqlite: needs a file path (sqlite:PATH)") }
            return .sqlite(path: path)
        }
        if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
            do {
                return .postgres(try PostgresStoreConfiguration(url: text, replicaID: replicaID))
            } catch {
                throw ConfigurationError(description: error.description)
            }
        }
        throw ConfigurationError(description: "must be sqlite:PATH or postgres://USER[:PASSWORD]@HOST:PORT/DATABASE")
    }

    /// `host:pid`: names this process as the owner of its claims.
    public static func defaultReplicaID() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        let host = gethostname(&buffer, buffer.count) == 0
            ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "herald"
        return "\(host):\(getpid())"
    }

    /// Where the data lives, for logs (a URL without its password).
    public var description: String {
        switch self {
        case .sqlite(let path): return "sqlite:\(path)"
        case .postgres(let configuration): return configuration.redactedURL
        }
    }
}

/// A store opened by `HeraldServer`, with what only SQLite has.
struct OpenedStore {
    let store: any ServableStore
    /// The data directory's lock (SQLite: one process per file); nil with
    /// PostgreSQL, which replicas share.
    let lock: DataDirectoryLock?
    /// The directory the store probe writes a file into (SQLite's), or nil.
    let probeDirectory: String?

    /// Opens the configured store. SQLite: creates and locks the data
    /// directory first (released again when the open fails).
    static func open(_ configuration: HeraldConfiguration, metrics: HeraldMetrics, logger: Logger) async throws -> OpenedStore {
        switch configuration.store ?? .sqlite(path: configuration.databasePath) {
        case .sqlite(let path):
            try POSIXFile.createDirectories(configuration.dataDirectory)
            // One writer per store: locked before the store opens and anything
            // binds; released after the store closed (StoreService) or here.
            let lock = try DataDirectoryLock(directory: configuration.dataDirectory)
            logger.info("data directory", metadata: ["path": "\(configuration.dataDirectory)"])
            warnIfShared(directory: configuration.dataDirectory, logger: logger)
            var options = SQLiteStore.Options()
            options.durability = configuration.durability
            options.commitObserver = { [metrics] in metrics.storeCommitted($0) }
            options.readSideThreads = configuration.readSide.maxConcurrent
            options.readSideTimeout = configuration.readSide.timeout
            do {
                let store = try SQLiteStore(path: path, options: options)
                return OpenedStore(store: store, lock: lock, probeDirectory: configuration.dataDirectory)
            } catch {
                lock.release()
                throw error
            }
        case .postgres(var postgres):
            postgres.readConnections = configuration.readSide.maxConcurrent
            postgres.readTimeout = configuration.readSide.timeout
            logger.info("store", metadata: ["postgres": "\(postgres.redactedURL)", "replica": "\(postgres.replicaID)"])
            let store = try await PostgresStore.open(postgres, logger: logger)
            return OpenedStore(store: store, lock: nil, probeDirectory: nil)
        }
    }

    /// A data directory Herald did not create may let group or others list
    /// it (systemd's `StateDirectoryMode=` defaults to 0755): the files in it
    /// are 0600 either way, so this warns and changes nothing.
    static func warnIfShared(directory: String, logger: Logger) {
        var info = stat()
        guard stat(directory, &info) == 0, info.st_mode & 0o077 != 0 else { return }
        logger.warning("data directory is accessible by group or others; its files are 0600, but run chmod 700 on it",
                       metadata: ["path": "\(directory)", "mode": "0\(String(UInt32(info.st_mode) & 0o777, radix: 8))"])
    }
}

extension StoreLocation {
    /// How long a PostgreSQL claim is leased unless configured (the store's default).
    public static var defaultLeaseMilliseconds: Int64 { PostgresStoreConfiguration.defaultLeaseMilliseconds }
}
