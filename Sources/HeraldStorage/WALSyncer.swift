
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Pipelined fsync for group commit: the writer commits a batch with
/// `synchronous=NORMAL` (frames written to the WAL, not yet fsynced) and
/// moves on to the next batch at once; this thread `fdatasync`s the WAL file
/// and only then resumes the callers of every batch committed before the
/// sync began. One fsync covers several batches, and the writer never waits
/// for the disk.
///
/// Why that is as durable as `synchronous=FULL` for acknowledged writes:
/// `fdatasync` flushes the file's data whichever descriptor names it, so
/// when a caller resumes, its commit frame is on disk. The WAL is only
/// rewritten from the start after a checkpoint copied every frame into the
/// database file and synced it (SQLite's NORMAL still syncs at checkpoints).
// @unchecked Sendable: `pending`, the counters and the stop state are
// guarded by `condition`; `fd` is used only by the sync thread.
final class WALSyncer: @unchecked Sendable {
    private let condition = WorkerCondition(value: false)
    private var pending: [any WriteJob] = []
    private let stopping = WorkerStop()
    private var syncs = 0
    private var lastFailure: String?
    private let fd: Int32
    private let walPath: String

    init(walPath: String) throws {
        let fd = open(walPath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw StoreError.cannotOpen(path: walPath, detail: "cannot open the WAL to sync it")
        }
        self.fd = fd
        self.walPath = walPath
        startThread(name: "herald-store-wal-sync") { [self] in self.loop() }
    }

    /// Resumes `jobs` after the next WAL sync.
    func resumeAfterSync(_ jobs: [any WriteJob]) {
        condition.lock()
        pending.append(contentsOf: jobs)
        condition.unlock(withValue: true)
    }

    var stats: (syncs: Int, lastFailure: String?) {
        condition.lock()
        defer { condition.unlock() }
        return (syncs, lastFailure)
    }

    /// Syncs and resumes what is pending, then stops the thread.
    func close() async {
        await stopping.stop(signalling: condition)
    }

    private static func syncData(_ fd: Int32) -> Int32 {
        #if os(Linux)
        return fdatasync(fd)
        #else
        return fsync(fd)
        #endif
    }

    private func loop() {
        while true {
            condition.lock(whenValue: true)
            if pending.isEmpty && !stopping.isRequested {
                condition.unlock(withValue: false)
                continue
            }
            if pending.isEmpty {
                closeDescriptor(fd)
                let waiters = stopping.exited()
                condition.unlock()
                waiters.forEach { $0.resume() }
                return
            }
            let jobs = pending
            pending = []
            condition.unlock(withValue: stopping.isRequested)

            var failure: StoreError?
            if Self.syncData(fd) != 0 {
                // After a failed fsync the state of the written pages is
                // unknown: these writes are not acknowledged.
                failure = .sqlite(SQLiteError(
                    extendedCode: 10 /* SQLITE_IOERR */,
                    message: "fdatasync(\(walPath)) failed: \(String(cString: strerror(errno)))"))
            }
            condition.lock()
            syncs += 1
            if let failure { lastFailure = failure.description }
            condition.unlock()
            for job in jobs { job.finish(commitError: failure) }
        }
    }
}

private func closeDescriptor(_ fd: Int32) {
    _ = close(fd)
}
