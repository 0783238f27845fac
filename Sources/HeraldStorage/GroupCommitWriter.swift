import CInterop
import NIOConcurrencyHelpers
import Synchronization

/// Counters of the group-commit writer, for tests and metrics.
public struct WriteStats: Sendable, Hashable {
    /// Transactions committed.
    public var commits: Int
    /// Write operations completed (committed or failed).
    public var writes: Int
    /// The most operations committed together in one transaction.
    public var largestBatch: Int
    /// WAL fsyncs by the pipelined syncer (0 with other durability modes).
    public var walSyncs: Int = 0
}

/// One queued write: runs on the writer thread inside the batch transaction,
/// then learns whether the batch committed.
protocol WriteJob: AnyObject {
    /// Runs the operation — in its own savepoint when `isolated` — and
    /// returns its error, if any. May run twice (see `commit`).
    func run(_ db: Database, isolated: Bool) -> (any Error)?
    /// True when the caller no longer wants it (see `WriteAbandonment`).
    var isAbandoned: Bool { get }
    /// True when it may leave its inserts in `Database.insertBatch`; the
    /// writer flushes that batch before any job for which this is false.
    var defersInserts: Bool { get }
    /// Resumes the caller: with the operation's result after a commit, or
    /// with `commitError` when the batch did not commit.
    func finish(commitError: (any Error)?)
}

/// When a queued write should be dropped instead of run: its caller's
/// deadline passed or its task was cancelled while it waited for a batch.
final class WriteAbandonment: Sendable {
    private let deadline: ContinuousClock.Instant?
    private let cancelled = Atomic<Bool>(false)

    init(deadline: ContinuousClock.Instant?) {
        self.deadline = deadline
    }

    func cancel() { cancelled.store(true, ordering: .relaxed) }

    /// Checked on the writer thread just before the write joins a transaction.
    var isAbandoned: Bool {
        cancelled.load(ordering: .relaxed) || deadline.map { $0 <= ContinuousClock.now } ?? false
    }
}

extension CallbackWriteJob {
    /// A write whose caller awaits its `T` through a continuation.
    convenience init(body: @escaping @Sendable (Database) throws -> T, continuation: CheckedContinuation<T, any Error>,
                     abandonment: WriteAbandonment? = nil, defersInserts: Bool = false) {
        self.init(body: body, completion: { continuation.resume(with: $0) }, abandonment: abandonment,
                  defersInserts: defersInserts)
    }
}

/// A write whose caller learns its `T` through `completion`. `run` (writer
/// thread) keeps the result for `finish` (writer or WAL-sync thread).
final class CallbackWriteJob<T: Sendable>: WriteJob, Sendable {
    private let body: @Sendable (Database) throws -> T
    private let completion: @Sendable (Result<T, any Error>) -> Void
    private let result = Mutex<Result<T, any Error>?>(nil)
    let abandonment: WriteAbandonment?
    let defersInserts: Bool

    init(body: @escaping @Sendable (Database) throws -> T, completion: @escaping @Sendable (Result<T, any Error>) -> Void,
         abandonment: WriteAbandonment? = nil, defersInserts: Bool = false) {
        self.body = body
        self.completion = completion
        self.abandonment = abandonment
        self.defersInserts = defersInserts
    }

    var isAbandoned: Bool { abandonment?.isAbandoned ?? false }

    func run(_ db: Database, isolated: Bool) -> (any Error)? {
        defer { db.resetBusyStatements() }
        let outcome: Result<T, any Error>
        do {
            outcome = .success(isolated ? try db.savepoint { try body(db) } : try body(db))
        } catch {
            outcome = .failure(error)
        }
        result.withLock { $0 = outcome }
        if case .failure(let error) = outcome { return error }
        return nil
    }

    func finish(commitError: (any Error)?) {
        if let commitError {
            completion(.failure(commitError))
        } else if let result = result.withLock({ $0 }) {
            completion(result)
        } else {
            completion(.failure(StoreError.closed))
        }
    }
}

/// Group commit: one thread owns the write connection and drains every queued
/// write into one transaction — one commit, one fsync — then resumes each
/// caller. A caller's `await` returns only after its transaction committed.
///
/// Batching needs no timer: while one batch commits (fsync), new writes queue
/// up and form the next batch. A lone write commits at once.
// @unchecked Sendable: the queue, stats and stop state are guarded by
// `condition`; `db` is touched only by the writer thread.
final class GroupCommitWriter: @unchecked Sendable {
    private let condition = WorkerCondition(value: false)
    private var queue: [any WriteJob] = []
    private let stopping = WorkerStop()
    private var stats = WriteStats(commits: 0, writes: 0, largestBatch: 0)
    private var lastCommitError: String?
    private var lastCommitFailed = false

    /// Touched only by the writer thread once started.
    private let db: Database
    private let maxBatch: Int
    private let checkpointer: Checkpointer
    private let checkpointPages: Int
    private let walLimitPages: Int
    /// When set, callers resume only after it synced the WAL.
    let syncer: WALSyncer?
    private let commitObserver: (@Sendable (Duration) -> Void)?
    /// Writer thread only: the fast path's gathered inserts.
    private let insertBatch = MessageInsertBatch()

    init(
        database: Database, maxBatch: Int, checkpointer: Checkpointer, syncer: WALSyncer?,
        checkpointPages: Int, walLimitPages: Int, commitObserver: (@Sendable (Duration) -> Void)? = nil
    ) {
        self.db = database
        self.commitObserver = commitObserver
        self.syncer = syncer
        self.maxBatch = max(1, maxBatch)
        self.checkpointer = checkpointer
        self.checkpointPages = checkpointPages
        self.walLimitPages = walLimitPages
        startThread(name: "herald-store-writer") { [self] in self.loop() }
    }

    /// Queues `body` and awaits its commit.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            enqueue(CallbackWriteJob(body: body, continuation: continuation))
        }
    }

    /// Queues `body` and awaits its commit, unless `abandonment` says the
    /// caller gave up (deadline passed, task cancelled) before the write
    /// joined a transaction: then nothing is written and it throws
    /// `StoreError.abandoned`. `defersInserts`: see `WriteJob`.
    func write<T: Sendable>(
        abandonment: WriteAbandonment, defersInserts: Bool = false, _ body: @escaping @Sendable (Database) throws -> T
    ) async throws -> T {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                enqueue(CallbackWriteJob(
                    body: body, continuation: continuation, abandonment: abandonment, defersInserts: defersInserts))
            }
        } onCancel: {
            abandonment.cancel()
        }
    }

    /// Queues `body`; `completion` gets its result after the commit (or
    /// `StoreError.abandoned` if `abandonment` said so first), on the writer
    /// or WAL-sync thread: it must not block.
    func write<T: Sendable>(
        abandonment: WriteAbandonment, defersInserts: Bool = false, _ body: @escaping @Sendable (Database) throws -> T,
        completion: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        enqueue(CallbackWriteJob(body: body, completion: completion, abandonment: abandonment, defersInserts: defersInserts))
    }

    private func enqueue(_ job: any WriteJob) {
        condition.lock()
        if stopping.isRequested {
            condition.unlock()
            job.finish(commitError: StoreError.closed)
            return
        }
        queue.append(job)
        condition.unlock(withValue: true)
    }

    /// Whether `close()` was asked for: later writes throw `StoreError.closed`.
    var isClosing: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopping.isRequested
    }

    var currentStats: WriteStats {
        condition.lock()
        var current = stats
        condition.unlock()
        current.walSyncs = syncer?.stats.syncs ?? 0
        return current
    }

    /// Writes queued and not yet taken by the writer thread.
    var queuedCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return queue.count
    }

    /// (ok, last error text) of the most recent commit.
    var commitHealth: (ok: Bool, lastError: String?) {
        condition.lock()
        let health = (ok: !lastCommitFailed, lastError: lastCommitError)
        condition.unlock()
        if let syncFailure = syncer?.stats.lastFailure {
            return (false, syncFailure)
        }
        return health
    }

    /// Commits what is queued, stops the thread and waits for it.
    func close() async {
        await stopping.stop(signalling: condition)
    }

    private func loop() {
        while true {
            condition.lock(whenValue: true)
            if queue.isEmpty && !stopping.isRequested {
                condition.unlock(withValue: false)
                continue
            }
            if queue.isEmpty {
                db.close()
                let waiters = stopping.exited()
                condition.unlock()
                waiters.forEach { $0.resume() }
                return
            }
            let batch: [any WriteJob]
            if queue.count <= maxBatch {
                batch = queue
                queue = []
            } else {
                batch = Array(queue.prefix(maxBatch))
                queue.removeFirst(maxBatch)
            }
            condition.unlock(withValue: !queue.isEmpty || stopping.isRequested)
            commit(batch)
        }
    }

    /// Commits `batch` in one transaction. Fast path: every operation runs
    /// straight in the transaction, Schedules' rows gathered into
    /// multi-row statements (`MessageInsertBatch`). A savepoint per operation would copy each
    /// page it touches into the statement sub-journal — most of a page per
    /// write — so it is only paid when an operation fails: then the batch is
    /// rolled back and run again with a savepoint around each operation, so
    /// that the failing one is undone alone and the others still commit.
    private func commit(_ batch: [any WriteJob]) {
        // Callers that gave up while queued (an overloaded store makes this
        // common, not rare): answered now, never written.
        var batch = batch
        batch.removeAll { job in
            guard job.isAbandoned else { return false }
            job.finish(commitError: StoreError.abandoned)
            return true
        }
        guard !batch.isEmpty else { return }
        var failure: (any Error)?
        let began = ContinuousClock.now
        do {
            try db.run("BEGIN IMMEDIATE")
            var anyFailed = false
            db.insertBatch = insertBatch
            for job in batch {
                if !job.defersInserts, !flushInserts() {
                    anyFailed = true
                    break
                }
                if job.run(db, isolated: false) != nil {
                    anyFailed = true
                    break
                }
            }
            if !anyFailed, !flushInserts() {
                anyFailed = true
            }
            db.insertBatch = nil
            insertBatch.removeAll()
            if anyFailed {
                if sqlite3_get_autocommit(db.handle) == 0 {
                    try db.run("ROLLBACK")
                }
                db.afterRollback()
                try db.run("BEGIN IMMEDIATE")
                for job in batch {
                    if let error = job.run(db, isolated: true), sqlite3_get_autocommit(db.handle) != 0 {
                        // SQLite rolled the whole transaction back (I/O
                        // error, disk full, …): nothing of this batch is
                        // durable.
                        failure = error
                        break
                    }
                }
            }
            if failure == nil {
                try db.beforeCommit()
                try db.run("COMMIT")
                commitObserver?(ContinuousClock.now - began)
            }
        } catch {
            failure = error
        }
        if failure != nil, sqlite3_get_autocommit(db.handle) == 0 {
            try? db.run("ROLLBACK")
        }
        if failure != nil { db.afterRollback() }

        condition.lock()
        stats.writes += batch.count
        if let failure {
            lastCommitFailed = true
            lastCommitError = String(describing: failure)
        } else {
            lastCommitFailed = false
            stats.commits += 1
            stats.largestBatch = max(stats.largestBatch, batch.count)
        }
        condition.unlock()

        if failure == nil, let syncer {
            syncer.resumeAfterSync(batch)
        } else {
            for job in batch {
                job.finish(commitError: failure)
            }
        }

        // After resuming the callers: checkpoint work never delays an ack.
        if db.walFrames >= walLimitPages {
            db.restartCheckpoint()
        } else if db.walFrames >= checkpointPages {
            checkpointer.request()
        }
    }

    /// Writes the gathered inserts; false when that failed (the batch then
    /// takes the savepoint path, where nothing is gathered).
    private func flushInserts() -> Bool {
        do {
            try insertBatch.flush(db)
            return true
        } catch {
            return false
        }
    }
}
