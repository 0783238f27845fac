import CInterop
import HeraldCore
import HeraldPrimitives

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The embedded store: one SQLite file in WAL mode, written through a
/// group-commit writer thread, read through a small pool of connections.
///
/// Durability (`Options.durability`): by default an acknowledged write
/// survives kill -9 *and* power loss — its caller resumes only after the WAL
/// was fsynced (`synchronous=FULL`) — and group commit amortizes that fsync
/// over every write queued meanwhile.
public final class SQLiteStore: CallbackScheduling {
    /// When a write is acknowledged, relative to the disk.
    public enum Durability: Sendable {
        /// Default. SQLite's `synchronous=FULL`: the WAL is fsynced inside
        /// each (group) commit, so an acknowledged write survives kill -9 and
        /// power loss. While one batch syncs, the next one queues up and
        /// grows: the fsync is paid once per batch.
        case sqliteFull
        /// Also survives power loss, with the fsync moved off the writer: the
        /// commit runs with `synchronous=NORMAL` and `WALSyncer` resumes the
        /// callers after `fdatasync` of the WAL, while the writer commits the
        /// next batch. Pays off when fsync is slow (network block storage);
        /// with a fast fsync it makes batches smaller and was no faster.
        case pipelinedSync
        /// `synchronous=NORMAL` without a sync before the ack: survives
        /// kill -9 (the WAL write is in the OS page cache), may lose the last
        /// commits on power loss.
        case processCrash
    }

    public struct Options: Sendable {
        public var durability: Durability = .sqliteFull
        /// How long a connection waits for a lock held by another process.
        public var busyTimeoutMs: Int32 = 5_000
        /// Run `PRAGMA quick_check` at open (reads the whole file once).
        public var integrityCheckAtOpen = true
        /// Most writes committed in one transaction.
        public var maxBatch = 4_096
        /// Create missing parent directories of the database file.
        public var createDirectory = true
        /// WAL pages after which the background checkpointer copies the WAL
        /// into the database file (SQLite's auto-checkpoint default, 1,000).
        public var checkpointPages = 1_000
        /// WAL pages after which the writer itself runs a blocking RESTART
        /// checkpoint between batches, bounding the WAL under sustained load.
        public var walLimitPages = 32_768
        /// Told each group commit's time (BEGIN to COMMIT), on the writer thread.
        public var commitObserver: (@Sendable (Duration) -> Void)?
        /// Threads (each with its connection) running the read side's
        /// queries (GetMessage, ListMessages, CampaignReport), started as
        /// needed: at most this many run at once, the others queue.
        public var readSideThreads = 8
        /// A read-side query running longer is interrupted
        /// (`StoreError.readTimedOut`).
        public var readSideTimeout: Duration = .seconds(5)

        public init() {}
    }

    /// The database file.
    public let path: String
    let writer: GroupCommitWriter
    private let readers: ReaderPool
    /// The read side's own threads (`ReadSideThreads`), apart from `readers`
    /// (the dispatcher's and Schedule's reads).
    let readSide: ReadSideThreads
    private let checkpointer: Checkpointer
    /// The throttle's slots (`PolicyLedger`): this process's own.
    let throttle = ThrottleBook()

    /// Opens (creating or migrating) the database at `path`.
    ///
    /// Refuses, without changing the file: a file that is not SQLite
    /// (`.notADatabase`), one failing `quick_check` (`.corrupt`), one with a
    /// newer schema (`.newerSchema`), and a file or directory that is not
    /// writable (`.readOnly` / `.cannotOpen`).
    public init(path: String, options: Options = Options()) throws {
        self.path = path
        let db = try Self.openWriter(path: path, options: options)
        let checkpointConnection: Database
        do {
            checkpointConnection = try Database(path: path, create: false, busyTimeoutMs: options.busyTimeoutMs)
            try checkpointConnection.execute("PRAGMA synchronous = \(options.durability == .sqliteFull ? "FULL" : "NORMAL")")
        } catch let error as StoreError {
            throw Self.classify(error, path: path)
        }
        let syncer = options.durability == .pipelinedSync ? try WALSyncer(walPath: path + "-wal") : nil
        let checkpointer = Checkpointer(database: checkpointConnection)
        db.trackWALSize()
        self.checkpointer = checkpointer
        self.writer = GroupCommitWriter(
            database: db, maxBatch: options.maxBatch, checkpointer: checkpointer, syncer: syncer,
            checkpointPages: options.checkpointPages, walLimitPages: options.walLimitPages,
            commitObserver: options.commitObserver)
        self.readers = ReaderPool(path: path, busyTimeoutMs: options.busyTimeoutMs)
        self.readSide = ReadSideThreads(
            path: path, busyTimeoutMs: options.busyTimeoutMs, maxThreads: options.readSideThreads, timeout: options.readSideTimeout)
    }

    /// Commits queued writes and closes the connections. Later calls throw
    /// `StoreError.closed`.
    public func close() async {
        // Readers first: the writer, closing last, checkpoints the WAL.
        readers.close()
        await readSide.close()
        await checkpointer.close()
        await writer.close()
        await writer.syncer?.close()
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
            try db.execute("PRAGMA synchronous = \(options.durability == .sqliteFull ? "FULL" : "NORMAL")")
            try db.execute("PRAGMA foreign_keys = ON")
            try db.execute("PRAGMA cache_size = -65536")
            // Statement sub-journals (savepoints) in memory, never a temp file.
            try db.execute("PRAGMA temp_store = MEMORY")
            // When the WAL restarts, truncate the file back to 64 MiB at most.
            try db.execute("PRAGMA journal_size_limit = 67108864")
            try Schema.migrate(db)
            db.messageChanges = try MessageChanges(on: db)
            return db
        } catch let error as StoreError {
            throw classify(error, path: path)
        }
    }

    /// File-level checks before SQLite touches anything.
    private static func preflight(path: String, options: Options) throws {
        var isDirectory = false
        if POSIXFile.exists(path, isDirectory: &isDirectory) {
            if isDirectory {
                throw StoreError.cannotOpen(path: path, detail: "is a directory")
            }
            guard let header = POSIXFile.readPrefix(path, count: 16) else {
                throw StoreError.cannotOpen(path: path, detail: "cannot read the file")
            }
            // An empty file is a valid empty database; anything else must
            // start with SQLite's magic string.
            if !header.isEmpty && header != Array("SQLite format 3\0".utf8) {
                throw StoreError.notADatabase(path: path)
            }
            if access(path, W_OK) != 0 {
                throw StoreError.readOnly(path: path, detail: String(cString: strerror(errno)))
            }
        }
        let directory = POSIXFile.deletingLastPathComponent(path)
        let dir = directory.isEmpty ? "." : directory
        if !POSIXFile.exists(dir, isDirectory: &isDirectory) {
            guard options.createDirectory else {
                throw StoreError.cannotOpen(path: path, detail: "directory \(dir) does not exist")
            }
            do {
                try POSIXFile.createDirectories(dir)
            } catch {
                throw StoreError.cannotOpen(path: path, detail: "cannot create directory \(dir): \(error)")
            }
        } else if !isDirectory {
            throw StoreError.cannotOpen(path: path, detail: "\(dir) is not a directory")
        }
        // WAL needs to create `-wal` and `-shm` next to the database.
        if access(dir, W_OK) != 0 {
            throw StoreError.readOnly(path: path, detail: "directory \(dir) is not writable: \(String(cString: strerror(errno)))")
        }
        try restrictStoreFileModes(path: path)
    }

    /// Maps SQLite's codes at open to the clear cases.
    static func classify(_ error: StoreError, path: String) -> StoreError {
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
        try await write { db in try Self.insert(messages, db) }
    }

    /// A write through the group-commit writer that changes nothing (it
    /// takes the write lock and commits): throws when the store cannot be
    /// written; a success clears an earlier commit failure from `health()`.
    public func probeWrite() async throws {
        try await writer.write { db in try db.run("UPDATE state_counts SET n = n WHERE 0") }
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

/// Device tokens and message content are for the owner only: a new
/// database is created here with mode 0600 (SQLite then gives its `-wal`,
/// `-shm` and `-journal` the database file's mode, whatever the umask
/// allows beyond it); an existing database and its companions that group
/// or others may access are tightened to 0600. Tightening is best effort
/// (a file of another owner cannot be changed: it is opened as it is).
func restrictStoreFileModes(path: String) throws {
    if !POSIXFile.exists(path) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if fd >= 0 {
            close(fd)
        } else {
            let code = errno
            if code != EEXIST {
                throw StoreError.cannotOpen(path: path, detail: "cannot create the database file: \(String(cString: strerror(code)))")
            }
        }
    }
    for file in [path, path + "-wal", path + "-shm", path + "-journal"] {
        var info = stat()
        guard stat(file, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_mode & 0o077 != 0 else { continue }
        // Result deliberately ignored: not ours to change (EPERM) is not a reason to refuse the store.
        _ = chmod(file, 0o600)
    }
}
