/// Waits for a task's end, but not longer than a bound: `await task.value`
/// cannot be cancelled, so a task that never ends would hold its waiter for
/// good (a shutdown that never finishes).
enum BoundedWait {
    /// True when `task` ended within `limit`; false when the time ran out
    /// first (the task goes on, unwaited).
    static func value(of task: Task<Void, Never>, atMost limit: Duration) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let once = ResumeOnce(continuation)
            let timer = Task {
                try? await Task.sleep(for: limit)
                once.resume(returning: false)
            }
            Task {
                await task.value
                timer.cancel()
                once.resume(returning: true)
            }
        }
    }
}
