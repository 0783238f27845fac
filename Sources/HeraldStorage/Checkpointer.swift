import CInterop
import NIOConcurrencyHelpers

/// Copies the WAL back into the database file on its own thread and its own
/// connection (`PASSIVE` checkpoints), so commits never wait for it.
///
/// SQLite's built-in auto-checkpoint runs inside the commit that crosses the
/// threshold: with group commit that stalls every queued caller for the copy
/// and the database-file fsync. Here the writer only signals; when the WAL
/// still outgrows a hard limit (sustained load never leaves a gap in which a
/// passive checkpoint can finish, so the WAL cannot restart), the writer runs
/// a `RESTART` checkpoint itself, which has little left to copy by then.
// @unchecked Sendable: `requested`, `checkpoints` and the stop state are
// guarded by `condition`; `db` is touched only by the checkpointer thread.
final class Checkpointer: @unchecked Sendable {
    private let condition = WorkerCondition(value: false)
    private var requested = false
    private let stopping = WorkerStop()
    private var checkpoints = 0
    private let db: Database

    init(database: Database) {
        self.db = database
        startThread(name: "herald-store-checkpointer") { [self] in self.loop() }
    }

    /// Asks for a checkpoint soon; cheap, never blocks.
    func request() {
        condition.lock()
        requested = true
        condition.unlock(withValue: true)
    }

    var completedCheckpoints: Int {
        condition.lock()
        defer { condition.unlock() }
        return checkpoints
    }

    func close() async {
        await stopping.stop(signalling: condition)
    }

    private func loop() {
        while true {
            condition.lock(whenValue: true)
            if stopping.isRequested {
                db.close()
                let waiters = stopping.exited()
                condition.unlock()
                waiters.forEach { $0.resume() }
                return
            }
            requested = false
            condition.unlock(withValue: false)

            var logFrames: Int32 = 0, copiedFrames: Int32 = 0
            let rc = sqlite3_wal_checkpoint_v2(db.handle, nil, SQLITE_CHECKPOINT_PASSIVE, &logFrames, &copiedFrames)
            condition.lock()
            if rc == SQLITE_OK { checkpoints += 1 }
            condition.unlock()
        }
    }
}
