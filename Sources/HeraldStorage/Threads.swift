import CInterop

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A pthread mutex and condition variable in stable heap storage (what
/// `NSCondition` was, without Foundation): `lock`/`unlock`, `wait` with the
/// lock held, `signal`.
final class PThreadCondition: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        mutex.initialize(to: pthread_mutex_t())
        cond.initialize(to: pthread_cond_t())
        precondition(pthread_mutex_init(mutex, nil) == 0)
        precondition(pthread_cond_init(cond, nil) == 0)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        cond.deinitialize(count: 1)
        mutex.deinitialize(count: 1)
        cond.deallocate()
        mutex.deallocate()
    }

    func lock() { precondition(pthread_mutex_lock(mutex) == 0) }
    func unlock() { precondition(pthread_mutex_unlock(mutex) == 0) }
    /// Atomically unlocks, sleeps until signalled (or spuriously), relocks.
    func wait() { precondition(pthread_cond_wait(cond, mutex) == 0) }
    func signal() { precondition(pthread_cond_signal(cond) == 0) }
}

/// A plain pthread mutex (what `NSLock` was).
typealias PThreadLock = PThreadCondition

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

/// The stop handshake of a worker thread whose state `condition` guards:
/// `stop(signalling:)` asks the loop to finish and returns once it has exited; the loop
/// checks `isRequested` and, on its way out, calls `exited()` with the lock
/// held and resumes what it returns after unlocking.
final class WorkerStop: @unchecked Sendable {
    // Guarded by the worker's condition.
    private(set) var isRequested = false
    private var hasExited = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func stop(signalling condition: PThreadCondition) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            condition.lock()
            isRequested = true
            if hasExited {
                condition.unlock()
                continuation.resume()
                return
            }
            waiters.append(continuation)
            condition.signal()
            condition.unlock()
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
