import CInterop
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

private final class ThreadBody {
    let name: String
    let body: () -> Void
    init(name: String, body: @escaping () -> Void) {
        self.name = name
        self.body = body
    }
}

/// Starts a detached pthread named `name` (at most 15 bytes show) running `body`.
func startThread(name: String, _ body: @escaping @Sendable () -> Void) {
    let box = Unmanaged.passRetained(ThreadBody(name: name, body: body)).toOpaque()
    #if canImport(Glibc)
    var thread = pthread_t()
    #else
    var thread: pthread_t?
    #endif
    let rc = pthread_create(&thread, nil, { argument in
        let box = Unmanaged<ThreadBody>.fromOpaque(argument!).takeRetainedValue()
        cinterop_set_current_thread_name(box.name)
        box.body()
        return nil
    }, box)
    precondition(rc == 0, "pthread_create failed: \(rc)")
    #if canImport(Glibc)
    pthread_detach(thread)
    #else
    if let thread { pthread_detach(thread) }
    #endif
}

/// The wake-up condition of a worker thread: NIO's `ConditionLock`, whose
/// value says whether the worker has something to do (work queued, or a stop
/// requested). Producers set it under the lock (`unlock(withValue: true)`);
/// the worker sleeps in `lock(whenValue: true)` and, after taking its work,
/// leaves it true only if more is waiting.
typealias WorkerCondition = ConditionLock<Bool>

/// The stop handshake of a worker thread whose state `condition` guards:
/// `stop(signalling:)` asks the loop to finish and returns once it has exited; the loop
/// checks `isRequested` and, on its way out, calls `exited()` with the lock
/// held and resumes what it returns after unlocking.
// @unchecked Sendable: every field is guarded by the worker's condition lock.
final class WorkerStop: @unchecked Sendable {
    private(set) var isRequested = false
    private var hasExited = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func stop(signalling condition: WorkerCondition) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            condition.lock()
            isRequested = true
            if hasExited {
                condition.unlock()
                continuation.resume()
                return
            }
            waiters.append(continuation)
            condition.unlock(withValue: true)
        }
    }

    /// Marks the loop gone (lock held); the caller resumes the result after
    /// unlocking.
    func exited() -> [CheckedContinuation<Void, Never>] {
        hasExited = true
        defer { waiters = [] }
        return waiters
    }
}
