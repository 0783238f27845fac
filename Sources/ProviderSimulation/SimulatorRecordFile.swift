package import HeraldPrimitives
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A simulator's record file: one line per accepted request, appended with
/// one `write` each (no user-space buffer), so a `kill -9` right after an
/// answer loses nothing that was answered. Opened for appending: a restart on
/// the same file keeps one record of everything.
package final class SimulatorRecordFile: Sendable {
    private let descriptor: Mutex<Int32>

    package init(path: String) throws(POSIXFileError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o666)
        guard fd >= 0 else { throw POSIXFileError("open", path: path, code: errno) }
        descriptor = Mutex(fd)
    }

    /// Appends one line; false when the write failed or the file is closed
    /// (the line is lost, the request is still answered).
    @discardableResult
    package func append(_ line: [UInt8]) -> Bool {
        descriptor.withLock { fd in fd >= 0 && POSIXFile.writeAll(fd, line) }
    }

    /// Closes the file; later appends fail.
    package func closeFile() {
        descriptor.withLock { fd in
            if fd >= 0 {
                _ = close(fd)
                fd = -1
            }
        }
    }

    deinit { closeFile() }
}
