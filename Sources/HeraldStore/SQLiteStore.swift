import CInterop
import Foundation
import HeraldCore

/// The embedded store: one SQLite file in WAL mode, written through a
/// group-commit writer thread, read through a small pool of connections.
///
/// Durability: `synchronous=FULL` by default, so an acknowledged write
/// survives kill -9 *and* power loss (the WAL is fsynced at every commit);
/// group commit amortizes that fsync over every write queued meanwhile.
/// `.normal` (WAL fsynced only at checkpoints) still survives kill -9 — the
/// committed frames are in the OS page cache — but may lose the last commits
/// on power loss.
public final class SQLiteStore: HeraldStore {
    /// How hard a commit waits for the disk.
    public enum Synchronous: String, Sendable {
        /// fsync the WAL at every commit: survives power loss.
        case full = "FULL"
        /// fsync only at checkpoints: survives process crashes, not power loss.
        case normal = "NORMAL"
    }

    public struct Options: Sendable {
        public var synchronous: Synchronous = .full
        /// How long a connection waits for a lock held by another process.
        public var busyTimeoutMs: Int32 = 5_000
        /// Run `PRAGMA quick_check` at open (reads the whole file once).
        public var integrityCheckAtOpen = true
        /// Most writes committed in one transaction.
        public var maxBatch = 4_096
        /// Create missing parent directories of the database file.
        public var createDirectory = true

        public init() {}
    }

    /// The database file.
    public let path: String
    let writer: GroupCommitWriter
    private let readers: ReaderPool

    /// Opens (creating or migrating) the database at `path`.
    ///
    /// Refuses, without changing the file: a file that is not SQLite
    /// (`.notADatabase`), one failing `quick_check` (`.corrupt`), one with a
    /// newer schema (`.newerSchema`), and a file or directory that is not
    /// writable (`.readOnly` / `.cannotOpen`).
    public init(path: String, options: Options = Options()) throws {
        self.path = path
        let db = try Self.openWriter(path: path, options: options)
        self.writer = GroupCommitWriter(database: db, maxBatch: options.maxBatch)
        self.readers = ReaderPool(path: path, busyTimeoutMs: options.busyTimeoutMs)
    }

    /// Commits queued writes and closes the connections. Later calls throw
    /// `StoreError.closed`.
    public func close() async {
        // Readers first: the writer, closing last, checkpoints the WAL.
        readers.close()
        await writer.close()
    }

    /// Group-commit counters (commits vs. writes: the batching factor).
    public var writeStats: WriteStats { writer.currentStats }

    /// The schema version this build writes.
    public static var schemaVersion: Int { Schema.version }

    // MARK: Opening

    private static func openWriter(path: String, options: Options) throws -> Database {
        try preflight(path: path, options: options)
        do {
            let db = try Database(path: path, create: true, busyTimeoutMs: options.busyTimeoutMs)
            if db.isReadOnly {
                throw StoreError.readOnly(path: path, detail: "SQLite opened the file read-only")
            }
            // Read-only checks first: nothing below may write to a file we
            // are going to refuse.
            if options.integrityCheckAtOpen {
                let statement = try db.prepare("PRAGMA quick_check")
                var problems: [String] = []
                while try statement.step() {
                    let line = statement.string(0)
                    if line != "ok" { problems.append(line) }
                }
                if !problems.isEmpty {
                    throw StoreError.corrupt(path: path, detail: problems.prefix(5).joined(separator: "; "))
                }
            }
            let version = Int(try db.scalarInt("PRAGMA user_version") ?? 0)
            if version > Schema.version {
                throw StoreError.newerSchema(path: path, found: version, supported: Schema.version)
            }
            let mode = try db.scalarText("PRAGMA journal_mode = WAL")
            if mode?.lowercased() != "wal" {
                throw StoreError.cannotOpen(path: path, detail: "could not enable WAL (journal_mode is \(mode ?? "unknown"))")
            }
            try db.execute("PRAGMA synchronous = \(options.synchronous.rawValue)")
            try db.execute("PRAGMA foreign_keys = ON")
            try db.execute("PRAGMA cache_size = -16000")
            try Schema.migrate(db)
            return db
        } catch let error as StoreError {
            throw classify(error, path: path)
        }
    }

    /// File-level checks before SQLite touches anything.
    private static func preflight(path: String, options: Options) throws {
        let files = FileManager.default
        var isDirectory: ObjCBool = false
        if files.fileExists(atPath: path, isDirectory: &isDirectory) {
            if isDirectory.boolValue {
                throw StoreError.cannotOpen(path: path, detail: "is a directory")
            }
            guard let handle = FileHandle(forReadingAtPath: path) else {
                throw StoreError.cannotOpen(path: path, detail: "cannot read the file")
            }
            defer { try? handle.close() }
            let header = (try? handle.read(upToCount: 16)) ?? Data()
            // An empty file is a valid empty database; anything else must
            // start with SQLite's magic string.
            if !header.isEmpty && header != Data("SQLite format 3\0".utf8) {
                throw StoreError.notADatabase(path: path)
            }
            if access(path, W_OK) != 0 {
                throw StoreError.readOnly(path: path, detail: String(cString: strerror(errno)))
            }
        }
        let directory = (path as NSString).deletingLastPathComponent
        let dir = directory.isEmpty ? "." : directory
        if !files.fileExists(atPath: dir, isDirectory: &isDirectory) {
            guard options.createDirectory else {
                throw StoreError.cannotOpen(path: path, detail: "directory \(dir) does not exist")
            }
            do {
                try files.createDirectory(atPath: dir, withIntermediateDirectories: true)
            } catch {
                throw StoreError.cannotOpen(path: path, detail: "cannot create directory \(dir): \(error.localizedDescription)")
            }
        } else if !isDirectory.boolValue {
            throw StoreError.cannotOpen(path: path, detail: "\(dir) is not a directory")
        }
        // WAL needs to create `-wal` and `-shm` next to the database.
        if access(dir, W_OK) != 0 {
            throw StoreError.readOnly(path: path, detail: "directory \(dir) is not writable: \(String(cString: strerror(errno)))")
        }
    }

    /// Maps SQLite's codes at open to the clear cases.
    private static func classify(_ error: StoreError, path: String) -> StoreError {
        guard case .sqlite(let sqlite) = error else { return error }
        switch sqlite.code {
        case SQLITE_NOTADB: return .notADatabase(path: path)
        case SQLITE_CORRUPT: return .corrupt(path: path, detail: sqlite.message)
        case SQLITE_READONLY, SQLITE_PERM: return .readOnly(path: path, detail: sqlite.message)
        case SQLITE_CANTOPEN, SQLITE_IOERR, SQLITE_FULL: return .cannotOpen(path: path, detail: sqlite.description)
        default: return error
        }
    }

    // MARK: Plumbing

    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await writer.write(body)
    }

    func read<T>(_ body: (Database) throws -> T) throws -> T {
        try readers.read(body)
    }

    /// Inserts many messages in one write, without last-request-wins checks
    /// (seeding benchmarks and tests; keys must be unique).
    func importMessages(_ messages: [StoredMessage]) async throws {
        try await write { db in
            for message in messages {
                try MessageRows.insert(db, message)
                if let key = message.idempotencyKey {
                    try db.run("INSERT INTO message_keys(bundle_id, idempotency_key, message_id) VALUES (?1, ?2, ?3)") {
                        try $0.bind(message.bundleID, at: 1)
                        try $0.bind(key, at: 2)
                        try $0.bind(message.id, at: 3)
                    }
                }
            }
        }
    }

    public func health() async -> StoreHealth {
        let commit = writer.commitHealth
        do {
            _ = try read { db in try db.scalarInt("SELECT count(*) FROM state_counts") }
            return StoreHealth(kind: "sqlite", location: path, ok: commit.ok, lastError: commit.lastError)
        } catch {
            return StoreHealth(kind: "sqlite", location: path, ok: false, lastError: String(describing: error))
        }
    }
}
