import CInterop
import HeraldPrimitives

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `StoreBackup.copy` copied, checked by reading the copy back.
public struct BackupSummary: Sendable, Hashable, CustomStringConvertible {
    public var source: String
    public var destination: String
    /// Database pages copied, and their size in bytes.
    public var pages: Int
    public var pageSize: Int
    /// The copy's schema version (`PRAGMA user_version`).
    public var schemaVersion: Int
    /// Rows in the copy.
    public var messages: Int
    public var devices: Int
    public var outcomes: Int

    public var description: String {
        let mib = Double(pages * pageSize) / 1_048_576
        let size = (mib * 10).rounded() / 10
        return "backed up \(source) to \(destination): \(pages) pages of \(pageSize) bytes (\(size) MiB), "
            + "schema v\(schemaVersion), \(messages) messages, \(devices) devices, \(outcomes) device outcomes"
    }
}

/// Why a backup did not complete (the partial copy is removed).
public enum BackupError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No store at the source path.
    case noStore(path: String, detail: String)
    /// The destination exists; a backup never overwrites anything.
    case destinationExists(path: String)
    /// The destination could not be created.
    case cannotCreate(path: String, detail: String)
    /// An SQLite call failed (`step` names it).
    case failed(step: String, detail: String)

    public var description: String {
        switch self {
        case .noStore(let path, let detail): return "backup: no store at \(path) (\(detail))"
        case .destinationExists(let path): return "backup: \(path) exists; refusing to overwrite it"
        case .cannotCreate(let path, let detail): return "backup: cannot create \(path): \(detail)"
        case .failed(let step, let detail): return "backup: \(step) failed: \(detail)"
        }
    }
}

/// An online copy of the store with SQLite's backup API, safe while the
/// server runs: in WAL mode the copy is one read transaction (one
/// consistent snapshot) that never blocks the server's writer.
public enum StoreBackup {
    /// Copies the database at `source` into a new file `destination`.
    ///
    /// The copy is one `sqlite3_backup_step(-1)`: a single read transaction,
    /// so writes committed meanwhile (by this or another process) never make
    /// it restart. The copy is switched to a rollback journal (one
    /// self-contained file, no `-wal` beside it), then checked with
    /// `quick_check` and counted. Never overwrites: `destination` is created
    /// with `O_EXCL`, and removed again when anything fails.
    public static func copy(databaseAt source: String, to destination: String) throws(BackupError) -> BackupSummary {
        var isDirectory = false
        guard POSIXFile.exists(source, isDirectory: &isDirectory) else {
            throw .noStore(path: source, detail: String(cString: strerror(errno)))
        }
        guard !isDirectory else { throw .noStore(path: source, detail: "is a directory") }
        guard POSIXFile.readPrefix(source, count: 16) == Array("SQLite format 3\0".utf8) else {
            throw .noStore(path: source, detail: "not an SQLite database")
        }
        let fd = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let code = errno
            if code == EEXIST { throw .destinationExists(path: destination) }
            throw .cannotCreate(path: destination, detail: String(cString: strerror(code)))
        }
        close(fd)
        do {
            return try copyChecked(source: source, destination: destination)
        } catch {
            removePartialCopy(destination)
            throw error
        }
    }

    private static func removePartialCopy(_ destination: String) {
        for path in [destination, destination + "-journal", destination + "-wal", destination + "-shm"] {
            unlink(path)
        }
    }

    private static func copyChecked(source: String, destination: String) throws(BackupError) -> BackupSummary {
        let from: Database
        let to: Database
        do {
            from = try Database(path: source, create: false, busyTimeoutMs: 5_000)
            to = try Database(path: destination, create: false, busyTimeoutMs: 5_000)
        } catch {
            throw .failed(step: "open", detail: String(describing: error))
        }
        defer {
            to.close()
            from.close()
        }
        guard let backup = sqlite3_backup_init(to.handle, "main", from.handle, "main") else {
            throw .failed(step: "sqlite3_backup_init", detail: String(cString: sqlite3_errmsg(to.handle)))
        }
        // BUSY/LOCKED: a lock held for a moment (WAL recovery, a schema
        // change); retried a bounded number of times, 50 ms apart.
        func isBusy(_ code: Int32) -> Bool { (code & 0xFF) == SQLITE_BUSY || (code & 0xFF) == SQLITE_LOCKED }
        var stepCode = sqlite3_backup_step(backup, -1)
        var retries = 0
        while isBusy(stepCode) && retries < 100 {
            retries += 1
            _ = sqlite3_sleep(50)
            stepCode = sqlite3_backup_step(backup, -1)
        }
        let pages = Int(sqlite3_backup_pagecount(backup))
        // finish releases the backup even after a failed step; its code
        // repeats the step's error, which is reported first.
        let finishCode = sqlite3_backup_finish(backup)
        guard stepCode == SQLITE_DONE else {
            throw .failed(step: "sqlite3_backup_step", detail: "\(String(cString: sqlite3_errstr(stepCode))) (SQLite code \(stepCode))")
        }
        guard finishCode == SQLITE_OK else {
            throw .failed(step: "sqlite3_backup_finish", detail: String(cString: sqlite3_errmsg(to.handle)))
        }
        do {
            // The copied header says WAL (the source's mode): make the copy
            // one self-contained file; the server turns WAL on again at open.
            let mode = try to.scalarText("PRAGMA journal_mode = DELETE")
            guard mode?.lowercased() == "delete" else {
                throw BackupError.failed(step: "journal_mode", detail: "the copy's journal mode is \(mode ?? "unknown")")
            }
            let check = try to.scalarText("PRAGMA quick_check")
            guard check == "ok" else {
                throw BackupError.failed(step: "quick_check of the copy", detail: check ?? "no answer")
            }
            func count(_ table: String) throws -> Int { Int(try to.scalarInt("SELECT count(*) FROM \(table)") ?? 0) }
            return BackupSummary(
                source: source, destination: destination, pages: pages,
                pageSize: Int(try to.scalarInt("PRAGMA page_size") ?? 0),
                schemaVersion: Int(try to.scalarInt("PRAGMA user_version") ?? 0),
                messages: try count("messages"), devices: try count("devices"), outcomes: try count("outcomes"))
        } catch let error as BackupError {
            throw error
        } catch {
            throw .failed(step: "checking the copy", detail: String(describing: error))
        }
    }
}
