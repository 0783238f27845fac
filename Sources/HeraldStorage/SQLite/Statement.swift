import CInterop

/// A prepared statement owned by one `Database`; used by one thread at a time.
///
/// Cached statements are reset and their bindings cleared when handed out
/// again, so a caller always starts from a fresh state.
final class Statement {
    let handle: OpaquePointer
    let sql: String
    unowned let database: Database

    init(handle: OpaquePointer, sql: String, database: Database) {
        self.handle = handle
        self.sql = sql
        self.database = database
    }

    deinit { sqlite3_finalize(handle) }

    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    // MARK: Binding (1-based indices, as in SQLite)

    func bind(_ value: Int64, at index: Int32) throws {
        try check(sqlite3_bind_int64(handle, index, value))
    }

    func bind(_ value: Int64?, at index: Int32) throws {
        if let value { try bind(value, at: index) } else { try bindNull(at: index) }
    }

    func bind(_ value: Int, at index: Int32) throws {
        try bind(Int64(value), at: index)
    }

    func bind(_ value: Bool, at index: Int32) throws {
        try bind(Int64(value ? 1 : 0), at: index)
    }

    func bind(_ value: String, at index: Int32) throws {
        // Native Swift strings are contiguous, NUL-terminated UTF-8: the
        // implicit bridge to a C string copies nothing; SQLite copies.
        try check(sqlite3_bind_text(handle, index, value, Int32(value.utf8.count), cinterop_sqlite_transient()))
    }

    func bind(_ value: String?, at index: Int32) throws {
        if let value { try bind(value, at: index) } else { try bindNull(at: index) }
    }

    /// Binds a value `MessageChanges` kept: its text (SQLite copies it), or
    /// NULL when it is not text.
    func bind(text value: cinterop_row_value, at index: Int32) throws {
        guard value.type == SQLITE_TEXT, let text = value.text else { return try bindNull(at: index) }
        try check(sqlite3_bind_text(handle, index, UnsafeRawPointer(text).assumingMemoryBound(to: CChar.self), value.length,
                                    cinterop_sqlite_transient()))
    }

    func bind(_ bytes: [UInt8], at index: Int32) throws {
        // An empty buffer may have no base address, and a NULL pointer would
        // bind SQL NULL rather than an empty blob.
        let rc: Int32
        if bytes.isEmpty {
            rc = sqlite3_bind_zeroblob(handle, index, 0)
        } else {
            rc = bytes.withUnsafeBytes { raw in
                sqlite3_bind_blob(handle, index, raw.baseAddress, Int32(raw.count), cinterop_sqlite_transient())
            }
        }
        try check(rc)
    }

    func bindNull(at index: Int32) throws {
        try check(sqlite3_bind_null(handle, index))
    }

    // MARK: Stepping

    /// Advances to the next row; false when the statement is done.
    @discardableResult
    func step() throws -> Bool {
        database.changesOfLastStatement = nil
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE:
            try database.applyMessageChanges()
            return false
        default:
            throw database.error(rc, sql: sql)
        }
    }

    /// Runs the statement to completion, ignoring rows.
    func run() throws {
        while try step() {}
    }

    // MARK: Columns (0-based indices, as in SQLite)

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(handle, column)) }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }

    func string(_ column: Int32) -> String {
        guard let text = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    func optionalString(_ column: Int32) -> String? { isNull(column) ? nil : string(column) }

    func bytes(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let blob = sqlite3_column_blob(handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: blob, count: count))
    }

    private func check(_ rc: Int32) throws {
        if rc != SQLITE_OK { throw database.error(rc, sql: sql) }
    }
}
