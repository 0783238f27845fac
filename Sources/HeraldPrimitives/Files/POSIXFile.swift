#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed file-system call: which call, which path, `strerror(code)`.
public struct POSIXFileError: Error, Sendable, CustomStringConvertible {
    public var operation: String
    public var path: String
    public var code: Int32

    /// `code` has no default: `errno` must be read right after the failing
    /// call (`let code = errno`), before building the operation text or any
    /// clean-up (`close`, `unlink`, an allocation) can overwrite it; a default
    /// argument would be read only after the other arguments were evaluated.
    public init(_ operation: String, path: String, code: Int32) {
        self.operation = operation
        self.path = path
        self.code = code
    }

    public var description: String { "\(operation) \(path): \(String(cString: strerror(code)))" }
}

/// The few file operations Herald needs, on POSIX calls (no Foundation).
public enum POSIXFile {
    /// Whether `path` exists (following symlinks); sets `isDirectory`.
    public static func exists(_ path: String, isDirectory: inout Bool) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        isDirectory = (info.st_mode & S_IFMT) == S_IFDIR
        return true
    }

    /// Whether `path` exists (following symlinks).
    public static func exists(_ path: String) -> Bool {
        var isDirectory = false
        return exists(path, isDirectory: &isDirectory)
    }

    /// Up to `count` bytes from the start of the file; nil when it cannot be opened or read.
    public static func readPrefix(_ path: String, count: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, count - filled) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { return nil }
            if n == 0 { break }
            filled += n
        }
        return Array(bytes[..<filled])
    }

    /// The whole file's bytes.
    public static func readBytes(_ path: String) throws(POSIXFileError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { let code = errno; throw POSIXFileError("open", path: path, code: code) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            let code = errno
            if n < 0 && code == EINTR { continue }
            guard n >= 0 else { throw POSIXFileError("read", path: path, code: code) }
            if n == 0 { return bytes }
            bytes.append(contentsOf: chunk[..<n])
        }
    }

    /// The whole file as UTF-8 text; throws when it is not valid UTF-8
    /// (as `String(contentsOfFile:encoding: .utf8)` did).
    public static func readText(_ path: String) throws(POSIXFileError) -> String {
        let bytes = try readBytes(path)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw POSIXFileError("decode UTF-8 of", path: path, code: EILSEQ)
        }
        return text
    }

    /// `mkdir -p`: creates `path` and missing parents with `mode` (less the
    /// umask); 0700 by default (Herald's data directory holds device tokens
    /// and message content). Existing directories are left as they are.
    public static func createDirectories(_ path: String, mode: UInt32 = 0o700) throws(POSIXFileError) {
        var isDirectory = false
        if exists(path, isDirectory: &isDirectory) {
            guard isDirectory else { throw POSIXFileError("mkdir", path: path, code: EEXIST) }
            return
        }
        let parent = deletingLastPathComponent(path)
        if !parent.isEmpty && parent != path { try createDirectories(parent, mode: mode) }
        if mkdir(path, mode_t(mode)) != 0 {
            let code = errno
            if code != EEXIST { throw POSIXFileError("mkdir", path: path, code: code) }
        }
    }

    /// `path` without its last component, as `NSString.deletingLastPathComponent`:
    /// `/a/b/c` → `/a/b`, `/a` → `/`, `c` → ``, trailing slashes ignored.
    public static func deletingLastPathComponent(_ path: String) -> String {
        var bytes = Array(path.utf8)
        while bytes.count > 1 && bytes.last == UInt8(ascii: "/") { bytes.removeLast() }
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return "" }
        var end = slash
        while end > 0 && bytes[end - 1] == UInt8(ascii: "/") { end -= 1 }
        if end == 0 { return "/" }
        return String(decoding: bytes[..<end], as: UTF8.self)
    }
}

extension POSIXFile {
    /// Writes every byte to `fd`, retrying short writes and EINTR; false on
    /// an error (errno, read right after the failing `write`, says which).
    @discardableResult
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        writeAllOrErrno(fd, bytes) == nil
    }

    /// Writes every byte to `fd`, retrying short writes and EINTR; nil when
    /// all were written, else the errno of the failing `write`, captured at once.
    static func writeAllOrErrno(_ fd: Int32, _ bytes: [UInt8]) -> Int32? {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                let code = errno
                if n < 0 && code == EINTR { continue }
                // write(2) returning 0 for a non-empty buffer sets no errno.
                guard n > 0 else { return n == 0 ? EIO : code }
                offset += n
            }
            return nil
        }
    }

    /// Replaces `path` with `bytes` atomically: writes `path.tmp-PID` with
    /// `mode` (less the umask; 0600 unless the caller says the file is
    /// public), fsyncs, renames.
    public static func writeAtomically(_ path: String, bytes: [UInt8], mode: UInt32 = 0o600) throws(POSIXFileError) {
        let temporary = "\(path).tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode_t(mode))
        guard fd >= 0 else { let code = errno; throw POSIXFileError("open", path: temporary, code: code) }
        if let code = writeAllOrErrno(fd, bytes) {
            let error = POSIXFileError("write", path: temporary, code: code)
            close(fd)
            unlink(temporary)
            throw error
        }
        // A failed fsync means the bytes may not be on disk: renaming over
        // the old file would then trade a good copy for a possibly torn one.
        if fsync(fd) != 0 {
            let code = errno
            let error = POSIXFileError("fsync", path: temporary, code: code)
            close(fd)
            unlink(temporary)
            throw error
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let code = errno
            let error = POSIXFileError("rename to \(path)", path: temporary, code: code)
            unlink(temporary)
            throw error
        }
    }
}

/// A secrets file (tokens, private keys, routes) that group or others may
/// read or write: refused at start (and on reload) so a key never sits
/// world-readable unnoticed.
public struct SecretFileModeError: Error, Sendable, CustomStringConvertible {
    /// What the file is, e.g. "tokens file".
    public var what: String
    public var path: String
    public var mode: UInt32

    public var description: String {
        let octal = String(mode & 0o777, radix: 8)
        return "\(what) \(path) is accessible by group or others (mode 0\(octal)); "
            + "it holds secrets: run `chmod 600 \(path)` (owner read/write only)"
    }
}

extension POSIXFile {
    /// Throws when `path` (followed through symlinks) grants group or others
    /// any access (`mode & 0o077 != 0`). A file that cannot be stat'ed passes:
    /// the read that follows reports why it cannot be read.
    public static func requireOwnerOnly(_ path: String, what: String) throws(SecretFileModeError) {
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        let mode = UInt32(info.st_mode)
        if mode & 0o077 != 0 { throw SecretFileModeError(what: what, path: path, mode: mode) }
    }
}
