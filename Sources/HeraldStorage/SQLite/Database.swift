import Synchronization
import CInterop

/// One SQLite connection: opened with explicit flags, extended result codes,
/// a busy timeout and a prepared-statement cache.
///
/// Not thread-safe by design (`SQLITE_OPEN_NOMUTEX`): each connection is used
/// by one thread at a time — the group-commit writer owns one, readers check
/// connections out of a pool.
final class Database {
    let handle: OpaquePointer
    let path: String
    private var statements: [String: Statement] = [:]
    /// `HotSQL` statements by slot.
    private var hot: [Statement?] = []

    /// Process-wide SQLite settings, applied before the first connection
    /// initializes the library: no memory statistics (a global mutex taken
    /// on every allocation, contended by the writer and the readers), the
    /// per-thread block cache, and the page cache that skips pcache1's
    /// whole-cache walk at commits (CInterop's sqlite_pcache.c).
    private static let configureOnce: Void = {
        _ = cinterop_sqlite_disable_memstatus()
        // SQLITE_MISUSE only if SQLite initialized before (then it keeps malloc, and pcache1 alone).
        _ = cinterop_sqlite_use_thread_cache_allocator()
        _ = cinterop_sqlite_use_bounded_page_cache()
    }()

    /// Opens (creating when `create`) the database at `path`.
    init(path: String, create: Bool, busyTimeoutMs: Int32) throws {
        _ = Self.configureOnce
        var db: OpaquePointer?
        var flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        if create { flags |= SQLITE_OPEN_CREATE }
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_close_v2(db)
            throw StoreError.cannotOpen(path: path, detail: "\(message) (SQLite code \(rc))")
        }
        self.handle = db
        self.path = path
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMs)
    }

    private var isClosed = false

    /// Where Schedules put their rows during the writer's batch fast path
    /// (see `MessageInsertBatch`); nil elsewhere: insert at once.
    var insertBatch: MessageInsertBatch?

    /// The writer's upkeep of counts and state events (schema v17,
    /// `MessageChanges`): read after every statement, written before every
    /// commit. Nil on every other connection.
    var messageChanges: MessageChanges?

    /// Reads what `messageChanges` kept of the last statement. The
    /// statements that writes keep `changes` answering for that statement.
    func applyMessageChanges() throws {
        guard let messageChanges, !messageChanges.isApplying, messageChanges.isPending else { return }
        let changed = Int(sqlite3_changes(handle))
        try messageChanges.apply(self)
        // Outside a transaction the statement has committed: its counts
        // follow at once (a hand edit; the store always writes in one).
        if sqlite3_get_autocommit(handle) != 0 { try messageChanges.write(self) }
        changesOfLastStatement = changed
    }

    /// `changes` of the caller's last statement when `applyMessageChanges`
    /// ran statements after it; nil otherwise (a statement clears it).
    var changesOfLastStatement: Int?

    /// Writes what the transaction's statements changed in the counts
    /// (`MessageChanges.write`): call it just before `COMMIT`.
    func beforeCommit() throws {
        try messageChanges?.write(self)
    }

    /// Forgets the counts' changes of a transaction rolled back.
    func afterRollback() {
        messageChanges?.discard()
    }

    /// Frames in the WAL after the last commit on this connection, when
    /// `trackWALSize()` was called.
    var walFrames = 0

    /// Replaces SQLite's auto-checkpoint (itself a WAL hook) with a hook that
    /// only records the WAL's size; checkpoints are then the caller's job.
    func trackWALSize() {
        sqlite3_wal_hook(handle, { context, _, _, frames in
            guard let context else { return SQLITE_OK }
            Unmanaged<Database>.fromOpaque(context).takeUnretainedValue().walFrames = Int(frames)
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Runs a `RESTART` checkpoint: copies what is left of the WAL and makes
    /// the next commit start writing it from the beginning.
    func restartCheckpoint() {
        var logFrames: Int32 = 0, copiedFrames: Int32 = 0
        if sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_RESTART, &logFrames, &copiedFrames) == SQLITE_OK {
            walFrames = 0
        }
    }

    deinit { close() }

    /// Finalizes cached statements and closes the connection. The last
    /// connection to close checkpoints the WAL into the database file.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        messageChanges = nil  // removes its hook while the connection is open
        statements.removeAll()
        hot.removeAll()
        sqlite3_close_v2(handle)
    }

    /// True when SQLite opened the file read-only (it silently falls back to
    /// read-only when the file is write-protected).
    var isReadOnly: Bool { sqlite3_db_readonly(handle, "main") == 1 }

    /// A cached prepared statement for `sql`, reset and ready to bind.
    func cached(_ sql: String) throws -> Statement {
        if let statement = statements[sql] {
            statement.reset()
            return statement
        }
        let statement = try prepare(sql, persistent: true)
        statements[sql] = statement
        return statement
    }

    /// `cached(_:)` for a statement of the per-push path, found by its slot.
    func cached(_ sql: HotSQL) throws -> Statement {
        if sql.slot < hot.count, let statement = hot[sql.slot] {
            statement.reset()
            return statement
        }
        let statement = try prepare(sql.text, persistent: true)
        if sql.slot >= hot.count { hot.append(contentsOf: repeatElement(nil, count: sql.slot + 1 - hot.count)) }
        hot[sql.slot] = statement
        return statement
    }

    /// `run(_:_:)` for a `HotSQL` statement.
    func run(_ sql: HotSQL, _ bind: (Statement) throws -> Void = { _ in }) throws {
        try run(try cached(sql), bind)
    }

    /// Binds, runs to completion and resets a cached statement.
    private func run(_ statement: Statement, _ bind: (Statement) throws -> Void) throws {
        try bind(statement)
        try statement.run()
        statement.reset()
    }

    /// Resets every statement still holding a row. An unreset statement keeps
    /// its read transaction — and so its stale WAL snapshot — open.
    func resetBusyStatements() {
        var stmt = sqlite3_next_stmt(handle, nil)
        while let current = stmt {
            if sqlite3_stmt_busy(current) != 0 { sqlite3_reset(current) }
            stmt = sqlite3_next_stmt(handle, current)
        }
    }

    /// A new, uncached prepared statement.
    func prepare(_ sql: String, persistent: Bool = false) throws -> Statement {
        var stmt: OpaquePointer?
        let flags: UInt32 = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        let rc = sqlite3_prepare_v3(handle, sql, -1, flags, &stmt, nil)
        guard rc == SQLITE_OK, let stmt else {
            throw error(rc, sql: sql)
        }
        return Statement(handle: stmt, sql: sql, database: self)
    }

    /// Runs one or more statements without results (schema, pragmas).
    func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        changesOfLastStatement = nil
        let rc = sqlite3_exec(handle, sql, nil, nil, &message)
        if rc != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_free(message)
            throw StoreError.sqlite(SQLiteError(extendedCode: sqlite3_extended_errcode(handle), message: text, sql: sql))
        }
        try applyMessageChanges()
    }

    /// Runs a cached statement that returns no rows.
    func run(_ sql: String, _ bind: (Statement) throws -> Void = { _ in }) throws {
        try run(try cached(sql), bind)
    }

    /// The first column of the first row of a pragma or query, as text.
    func scalarText(_ sql: String) throws -> String? {
        let statement = try prepare(sql)
        return try statement.step() ? statement.optionalString(0) : nil
    }

    /// The first column of the first row, as an integer.
    func scalarInt(_ sql: String) throws -> Int64? {
        let statement = try prepare(sql)
        return try statement.step() ? statement.optionalInt64(0) : nil
    }

    /// Rows changed by the last INSERT/UPDATE/DELETE.
    var changes: Int { changesOfLastStatement ?? Int(sqlite3_changes(handle)) }

    /// A typed error for result code `rc`, with SQLite's current message.
    func error(_ rc: Int32, sql: String?) -> StoreError {
        let extended = sqlite3_extended_errcode(handle)
        let code = (extended & 0xFF) == (rc & 0xFF) ? extended : rc
        return .sqlite(SQLiteError(extendedCode: code, message: String(cString: sqlite3_errmsg(handle)), sql: sql))
    }

    // MARK: Transactions

    /// Runs `body` in `BEGIN IMMEDIATE … COMMIT`, rolling back when it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try run("BEGIN IMMEDIATE")
        do {
            let value = try body()
            try beforeCommit()
            try run("COMMIT")
            return value
        } catch {
            try? run("ROLLBACK")
            afterRollback()
            throw error
        }
    }

    /// Runs `body` inside a savepoint, so that a failing operation undoes only
    /// its own changes within a larger (group-commit) transaction.
    func savepoint<T>(_ body: () throws -> T) throws -> T {
        try run("SAVEPOINT op")
        let mark = messageChanges?.mark
        do {
            let value = try body()
            try applyMessageChanges()
            try run("RELEASE op")
            return value
        } catch {
            try? run("ROLLBACK TO op")
            try? run("RELEASE op")
            if let mark { messageChanges?.restore(mark) }
            throw error
        }
    }
}

/// SQL the store runs for every push, prepared once per connection and found
/// by a slot number: `cached(_: String)` hashes the whole text per call, ~2.3k
/// instructions for these statements, ~12k per dispatched push in all
/// (bench/RESULTS.md, Session 44). Declare each as a `static let`.
final class HotSQL: Sendable {
    let text: String
    let slot: Int

    init(_ text: String) {
        self.text = text
        slot = Self.slots.withLock { next in
            defer { next += 1 }
            return next
        }
    }

    private static let slots = Mutex(0)
}
