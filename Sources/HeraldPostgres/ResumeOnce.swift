import Synchronization

/// A continuation several racers may try to resume: the first one wins, the
/// others do nothing (`BoundedWait`, `ClosedConnectionWatch`).
final class ResumeOnce<T: Sendable, Failure: Error>: Sendable {
    private let continuation: Mutex<CheckedContinuation<T, Failure>?>

    init(_ continuation: CheckedContinuation<T, Failure>) { self.continuation = Mutex(continuation) }

    func resume(with result: Result<T, Failure>) {
        continuation.withLock { $0.take() }?.resume(with: result)
    }

    func resume(returning value: T) { resume(with: .success(value)) }

    func resume(throwing error: Failure) { resume(with: .failure(error)) }
}
