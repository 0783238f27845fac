import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a data directory could not be locked.
public enum DataDirectoryLockError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Another process holds the lock; `pid` is what it wrote into the lock
    /// file (nil when it has not written it yet, or the file is not a PID).
    case held(directory: String, pid: Int32?)
    /// The lock file could not be opened, created or locked.
    case cannotLock(path: String, detail: String)

    public var description: String {
        switch self {
        case .held(let directory, let pid):
            let holder = pid.map { "PID \($0)" } ?? "PID unknown"
            return "data directory \(directory) is in use by another herald process (\(holder)); "
                + "one process per data directory (lock: \(directory)/\(DataDirectoryLock.fileName))"
        case .cannotLock(let path, let detail):
            return "cannot lock the data directory: \(path): \(detail)"
        }
    }
}

/// One writer per store: an exclusive `flock` on `<data-dir>/herald.lock`,
/// which holds the holder's PID.
///
/// Taken before the store opens and before anything binds, held until
/// `release()` or the process ends: the kernel drops a `flock` with the last
/// descriptor of its open file, so kill -9 releases it too, and a stale lock
/// file (its content) never blocks a start. The lock belongs to the open
/// file, not the process, so a second lock in the same process also fails.
/// The file itself is never removed: unlinking a lock file lets two
/// processes lock two different files of the same name.
public final class DataDirectoryLock: Sendable {
    /// The lock file's name inside the data directory.
    public static let fileName = "herald.lock"

    /// The locked directory.
    public let directory: String
    private let descriptor: Int32
    private let released = Atomic<Bool>(false)

    /// Locks `directory` (which must exist) without waiting.
    ///
    /// - Throws: `DataDirectoryLockError.held` naming the holder's PID when
    ///   another open file holds the lock; `.cannotLock` when the lock file
    ///   cannot be opened (a directory, no permission) or written.
    public init(directory: String) throws(DataDirectoryLockError) {
        let path = directory + "/" + Self.fileName
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            throw .cannotLock(path: path, detail: Self.errnoText())
        }
        var status = stat()
        guard fstat(fd, &status) == 0 else {
            let detail = Self.errnoText()
            close(fd)
            throw .cannotLock(path: path, detail: detail)
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw .cannotLock(path: path, detail: "not a regular file")
        }
        // Owner-only like the store beside it (a lock file of an older
        // version may be 0644); best effort: it holds only a PID.
        if status.st_mode & 0o077 != 0 { _ = fchmod(fd, 0o600) }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            if code == EINTR { continue }
            let detail = Self.errnoText()
            let holder = Self.readPID(fd)
            close(fd)
            // EWOULDBLOCK: held by another open file (EAGAIN's alias).
            if code == EAGAIN { throw .held(directory: directory, pid: holder) }
            throw .cannotLock(path: path, detail: detail)
        }
        // Ours now: the PID, for the error a second instance prints.
        let text = Array("\(getpid())\n".utf8)
        let written = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        guard written == text.count, ftruncate(fd, off_t(text.count)) == 0 else {
            let detail = written < 0 ? Self.errnoText() : "short write"
            close(fd)
            throw .cannotLock(path: path, detail: "cannot write the PID: \(detail)")
        }
        self.directory = directory
        self.descriptor = fd
    }

    /// Drops the lock (the file stays, with a PID nobody holds). Idempotent.
    public func release() {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // Closing the last descriptor of the open file drops the flock.
        close(descriptor)
    }

    deinit { release() }

    /// The PID a holder wrote into the lock file, read through our own
    /// descriptor (reading needs no lock).
    private static func readPID(_ fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[..<count], as: UTF8.self)
        let digits = text.prefix { $0 != "\n" }
        return Int32(digits).flatMap { $0 > 0 ? $0 : nil }
    }

    private static func errnoText() -> String { String(cString: strerror(errno)) }
}
