import HeraldStorage
import Logging
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#endif

/// Decides, about once a `interval`, whether the store can be written, and
/// tells `ServingStateCell` (Health and `/readyz` follow it).
///
/// Two probes, both cheap: (SQLite) a small file created, written and removed in the
/// data directory (a read-only directory or file system, a full disk — what
/// would stop the store growing its WAL or journal, which its open
/// descriptors alone do not show), and a write through the store's group
/// commit that changes nothing (the write lock and a commit; a failed commit of
/// real work shows in `health()` until one succeeds again); PostgreSQL: the
/// server accepts writes (`ServableStore.probeWrite`).
struct StoreProbeService: Service {
    /// The data directory (SQLite); nil: no file probe (PostgreSQL).
    let directory: String?
    let store: any ServableStore
    let state: ServingStateCell
    let interval: Duration
    let logger: Logger
    /// Told the data directory's free space at each probe.
    var metrics: HeraldMetrics?

    static let probeName = ".herald-write-probe"

    func run() async {
        let (directory, store, state, interval, logger, metrics) = (directory, store, state, interval, logger, metrics)
        await cancelWhenGracefulShutdown {
            var failing: String?
            while !Task.isCancelled {
                var problem = directory.flatMap(Self.probeDirectory)
                if problem == nil {
                    do { try await store.probeWrite() } catch { problem = "store write failed: \(error)" }
                }
                if problem == nil, case let health = await store.health(), !health.ok {
                    problem = "last commit failed: \(health.lastError ?? "unknown error")"
                }
                if let problem, failing == nil {
                    logger.error("store not writable: Health NOT_SERVING, /readyz 503", metadata: ["problem": "\(problem)"])
                } else if problem == nil, failing != nil {
                    logger.notice("store writable again: Health SERVING")
                }
                failing = problem
                state.setStoreWritable(problem == nil)
                metrics?.probed(disk: directory.flatMap(DiskSpace.of))
                try? await Task.sleep(for: interval)
            }
        }
    }

    /// Creates, writes and removes the probe file; the failing step and its
    /// errno text, or nil.
    static func probeDirectory(_ directory: String) -> String? {
        let path = directory + "/" + probeName
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return "cannot create \(path): \(String(cString: strerror(errno)))" }
        let bytes: [UInt8] = Array("herald\n".utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let writeErrno = errno
        let closed = close(fd)
        let closeErrno = errno
        let unlinked = unlink(path)
        let unlinkErrno = errno
        if written != bytes.count { return "cannot write \(path): \(String(cString: strerror(writeErrno)))" }
        if closed != 0 { return "cannot close \(path): \(String(cString: strerror(closeErrno)))" }
        if unlinked != 0 { return "cannot remove \(path): \(String(cString: strerror(unlinkErrno)))" }
        return nil
    }
}
