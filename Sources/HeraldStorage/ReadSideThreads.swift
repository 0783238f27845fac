import CInterop
import NIOConcurrencyHelpers
import Synchronization

/// The read side's queries (GetMessage, ListMessages, CampaignReport) on
/// threads of their own, at most `maxThreads`, each with its own read-only
/// connection, and each query stopped past `timeout`.
///
/// Why: a read used to run on the calling task's thread, the shared
/// cooperative pool (as many threads as cores), opening a connection per
/// concurrent read: a few hundred CampaignReports over a big campaign
/// blocked every thread of that pool, and with them every Schedule's and
/// delivery's continuation. Here they queue (first come, first served) for
/// a bounded number of threads, like the writer's queue; the callers
/// suspend instead of blocking. The service bounds how many may queue
/// (`ReadAdmission`).
///
/// A query runs with an SQLite progress handler that interrupts it once
/// `timeout` has passed since it started (`StoreError.readTimedOut`) or
/// once its caller was cancelled (`CancellationError`); a query whose
/// caller was cancelled before a thread took it is never run.
// @unchecked Sendable: `jobs`, `head`, `started`, `busy` and `closed` are
// guarded by `condition`; each thread owns its connection.
final class ReadSideThreads: @unchecked Sendable {
    /// One queued query.
    private struct Job {
        /// Runs the query on the thread's connection, or answers the
        /// connection's open failure.
        var run: (Result<Database, any Error>, ReadInterrupter) -> Void
        var cancelled: ReadCancellation
    }

    let maxThreads: Int
    let timeout: Duration
    private let path: String
    private let busyTimeoutMs: Int32
    private let condition = WorkerCondition(value: false)
    private var jobs: [Job] = []
    private var head = 0
    private var started = 0
    private var busy = 0
    private var closed = false
    private var exits: [CheckedContinuation<Void, Never>] = []

    init(path: String, busyTimeoutMs: Int32, maxThreads: Int, timeout: Duration) {
        self.path = path
        self.busyTimeoutMs = busyTimeoutMs
        self.maxThreads = max(1, maxThreads)
        self.timeout = timeout
    }

    /// Runs `body` on a read-side thread's connection, suspending the
    /// caller meanwhile: `StoreError.readTimedOut` past `timeout`,
    /// `CancellationError` when the caller's task is cancelled (a query
    /// under way is interrupted), `StoreError.closed` after `close()`.
    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let cancellation = ReadCancellation()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let job = Job(run: { [timeout] opened, interrupter in
                    if cancellation.isCancelled {
                        continuation.resume(throwing: CancellationError())
                        return
                    }
                    let db: Database
                    switch opened {
                    case .success(let connection): db = connection
                    case .failure(let error):
                        continuation.resume(throwing: error)
                        return
                    }
                    interrupter.begin(deadline: ContinuousClock.now + timeout, cancellation: cancellation)
                    defer {
                        interrupter.end()
                        db.resetBusyStatements()
                    }
                    do {
                        continuation.resume(returning: try body(db))
                    } catch let error as StoreError where error.isInterrupt {
                        continuation.resume(throwing: cancellation.isCancelled ? CancellationError() : StoreError.readTimedOut(limit: timeout))
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }, cancelled: cancellation)
                if let refused = enqueue(job) { continuation.resume(throwing: refused) }
            }
        } onCancel: {
            cancellation.cancel()
        }
    }

    /// Queues `job`, starting a thread when every started one is busy and
    /// fewer than `maxThreads` run; the error when closed.
    private func enqueue(_ job: Job) -> StoreError? {
        condition.lock()
        guard !closed else {
            condition.unlock()
            return .closed
        }
        jobs.append(job)
        let waiting = jobs.count - head
        let startOne = busy + waiting > started && started < maxThreads
        if startOne { started += 1 }
        condition.unlock(withValue: true)
        if startOne {
            startThread(name: "herald-store-read") { [self] in self.loop() }
        }
        return nil
    }

    /// Stops the threads once the queued queries ran; later reads throw
    /// `StoreError.closed`.
    func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            condition.lock()
            closed = true
            if started == 0 {
                condition.unlock()
                continuation.resume()
                return
            }
            exits.append(continuation)
            condition.unlock(withValue: true)
        }
    }

    private func loop() {
        let interrupter = ReadInterrupter()
        var db: Database?
        // The connection's progress handler points at `interrupter`: it
        // lives until the connection is closed.
        defer { withExtendedLifetime(interrupter) { db?.close() } }
        while true {
            condition.lock(whenValue: true)
            guard head < jobs.count else {
                // Woken with nothing queued: closing.
                started -= 1
                let done = started == 0 ? exits : []
                if started == 0 { exits = [] }
                condition.unlock(withValue: closed)
                done.forEach { $0.resume() }
                return
            }
            let job = jobs[head]
            head += 1
            if head > 64 && head * 2 > jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            busy += 1
            condition.unlock(withValue: head < jobs.count || closed)

            if db == nil && !job.cancelled.isCancelled {
                do {
                    let connection = try Database(path: path, create: false, busyTimeoutMs: busyTimeoutMs)
                    try connection.execute("PRAGMA query_only = 1")
                    interrupter.install(on: connection)
                    db = connection
                } catch {
                    job.run(.failure(error), interrupter)
                }
            }
            if let db {
                job.run(.success(db), interrupter)
            } else if job.cancelled.isCancelled {
                job.run(.failure(CancellationError()), interrupter)
            }

            condition.lock()
            busy -= 1
            condition.unlock(withValue: head < jobs.count || closed)
        }
    }
}

extension StoreError {
    /// SQLite's SQLITE_INTERRUPT: the progress handler stopped the query.
    var isInterrupt: Bool {
        if case .sqlite(let error) = self { return error.code == SQLITE_INTERRUPT }
        return false
    }
}

/// Whether a read's caller gave up.
final class ReadCancellation: Sendable {
    private let flag = Atomic<Bool>(false)
    var isCancelled: Bool { flag.load(ordering: .relaxed) }
    func cancel() { flag.store(true, ordering: .relaxed) }
}

/// A read thread's progress handler state: the running query's deadline and
/// cancellation, read by SQLite's callback on the same thread.
final class ReadInterrupter {
    private var deadline: ContinuousClock.Instant?
    private var cancellation: ReadCancellation?

    func begin(deadline: ContinuousClock.Instant, cancellation: ReadCancellation) {
        self.deadline = deadline
        self.cancellation = cancellation
    }

    func end() {
        deadline = nil
        cancellation = nil
    }

    /// Whether the running query must stop.
    var shouldInterrupt: Bool {
        if cancellation?.isCancelled == true { return true }
        if let deadline, ContinuousClock.now >= deadline { return true }
        return false
    }

    /// Checks every 1,000 virtual-machine instructions (microseconds).
    func install(on db: Database) {
        sqlite3_progress_handler(db.handle, 1_000, { context in
            guard let context else { return 0 }
            return Unmanaged<ReadInterrupter>.fromOpaque(context).takeUnretainedValue().shouldInterrupt ? 1 : 0
        }, Unmanaged.passUnretained(self).toOpaque())
    }
}
