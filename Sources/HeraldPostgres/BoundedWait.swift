/// Waits for a task's end, but not longer than a bound: `await task.value`
/// cannot be cancelled, so a task that never ends would hold its waiter for
/// good (a shutdown that never finishes).
enum BoundedWait {
    /// True when `task` ended within `limit`; false when the time ran out
    /// first (the task goes on, unwaited).
    ///
    /// The waiter answers before it stops the timer, and a stopped timer
    /// answers nothing: cancelling the timer first let its wake-up, on
    /// another thread, answer "did not end" for a task that had ended (the
    /// "pool did not end within the close timeout" flake: the pool had
    /// ended, milliseconds after `close()`).
    static func value(of task: Task<Void, Never>, atMost limit: Duration) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let once = ResumeOnce(continuation)
            let timer = Task {
                guard (try? await Task.sleep(for: limit)) != nil else { return }
                once.resume(returning: false)
            }
            Task {
                await task.value
                once.resume(returning: true)
                timer.cancel()
            }
        }
    }
}
