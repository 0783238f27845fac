public import HeraldCore

/// Why the store refused to open or could not complete an operation.
///
/// Open-time errors name the path and never leave a changed file behind: a
/// file that is not SQLite, is corrupt, or is newer than this code is refused
/// as it is, never recreated or overwritten.
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file at `path` exists but is not an SQLite database (wrong header).
    case notADatabase(path: String)
    /// The database failed its integrity check (`PRAGMA quick_check`) or
    /// SQLite reported corruption while opening it.
    case corrupt(path: String, detail: String)
    /// The database (or its directory, which WAL needs for `-wal`/`-shm`) is
    /// not writable.
    case readOnly(path: String, detail: String)
    /// SQLite or the file system could not open or create the database.
    case cannotOpen(path: String, detail: String)
    /// The database's schema (`PRAGMA user_version`) is newer than this code.
    case newerSchema(path: String, found: Int, supported: Int)
    /// A stored row holds a value this code cannot decode.
    case invalidRecord(String)
    /// The store has been closed.
    case closed
    /// The caller's deadline passed (or it was cancelled) before the write
    /// joined a transaction: nothing was written.
    case abandoned
    /// A state change `MessageState.allowedTransitions` does not allow for
    /// message `id`: nothing was written (a bug in the caller, not a race —
    /// a race shows as a compare-and-set that applies nothing).
    case illegalTransition(from: MessageState, to: MessageState, id: String)
    /// A read-side query (GetMessage, ListMessages, CampaignReport) ran
    /// past the read timeout and was stopped (SQLite: interrupted;
    /// PostgreSQL: `statement_timeout`). Nothing was written.
    case readTimedOut(limit: Duration)
    /// Any other SQLite failure.
    case sqlite(SQLiteError)
    /// Any other failure of a database server (PostgreSQL): the connection,
    /// or the server's error (SQLSTATE and message). Never holds a password.
    case database(String)

    public var description: String {
        switch self {
        case .notADatabase(let path):
            return "store: \(path) exists but is not an SQLite database; refusing to open or overwrite it"
        case .corrupt(let path, let detail):
            return "store: \(path) is corrupt (\(detail)); refusing to open it, the file is left as it is"
        case .readOnly(let path, let detail):
            return "store: \(path) is not writable (\(detail))"
        case .cannotOpen(let path, let detail):
            return "store: cannot open \(path): \(detail)"
        case .newerSchema(let path, let found, let supported):
            return "store: \(path) has schema version \(found), newer than this build supports (\(supported)); refusing to open it"
        case .invalidRecord(let detail):
            return "store: invalid stored record: \(detail)"
        case .closed:
            return "store: closed"
        case .abandoned:
            return "store: the caller's deadline passed before the write; nothing was written"
        case .illegalTransition(let from, let to, let id):
            return "store: message \(id) cannot go from \(from.rawValue) to \(to.rawValue); nothing was written"
        case .readTimedOut(let limit):
            return "store: the read ran past its time limit (\(limit)) and was stopped"
        case .sqlite(let error):
            return "store: \(error)"
        case .database(let detail):
            return "store: \(detail)"
        }
    }
}
