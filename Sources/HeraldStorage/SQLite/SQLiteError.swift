import CInterop

/// An error reported by SQLite, with its result code and message.
///
/// `code` is the primary result code (`SQLITE_BUSY`, `SQLITE_CONSTRAINT`, …);
/// `extendedCode` keeps the detail (`SQLITE_CONSTRAINT_UNIQUE`, …).
public struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The extended result code (extended result codes are always enabled).
    public var extendedCode: Int32
    /// sqlite3_errmsg() at the time of the failure.
    public var message: String
    /// The statement that failed, when there was one.
    public var sql: String?

    /// The primary result code (the low byte of the extended code).
    public var code: Int32 { extendedCode & 0xFF }

    public init(extendedCode: Int32, message: String, sql: String? = nil) {
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
    }

    /// True for a UNIQUE or PRIMARY KEY violation.
    public var isUniqueViolation: Bool {
        extendedCode == Self.constraintUnique || extendedCode == Self.constraintPrimaryKey
    }

    // Extended codes are function-like macros in sqlite3.h, invisible to Swift.
    static let constraintPrimaryKey: Int32 = SQLITE_CONSTRAINT | (6 << 8)
    static let constraintUnique: Int32 = SQLITE_CONSTRAINT | (8 << 8)

    public var description: String {
        let name = String(cString: sqlite3_errstr(extendedCode))
        var text = "SQLite error \(extendedCode) (\(name)): \(message)"
        if let sql { text += " — in `\(sql)`" }
        return text
    }
}
