import PushProviders
import HeraldCore
import HeraldStorage
import Logging
import Synchronization

/// Records pushes' hand-overs to their provider per device (the crash rule), just
/// before each request's HEADERS are written: marks arriving while one batch
/// is being written form the next, so a busy dispatcher pays one store write
/// (one commit) per batch, not per device.
///
/// The writes run in `run()`, owned by the delivery service (no task per
/// batch): a hook only queues its mark and wakes the loop. After `finish()`
/// the loop writes what is queued and returns; later marks fail at once
/// (the request is not sent).
final class HandOverLog: Sendable {
    private struct Pending {
        var marks: [HandOverMark] = []
        var callbacks: [@Sendable ((any Error)?) -> Void] = []
        var writing = false
        var finished = false
    }

    /// Why a mark queued after `finish()` was refused.
    struct Finished: Error, CustomStringConvertible {
        var description: String { "delivery has stopped: the hand-over was not recorded" }
    }

    private let store: any HeraldStore
    private let clock: any HeraldClock
    private let pending = Mutex(Pending())
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    init(store: any HeraldStore, clock: any HeraldClock) {
        self.store = store
        self.clock = clock
        (wakeups, wake) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// The hook for one device's request (``PreparedPush/send(willHandOver:)``).
    func hook(messageID: String, deviceToken: String, push: Int64) -> HandOverHook {
        { [self] done in
            let mark = HandOverMark(messageID: messageID, deviceToken: deviceToken, push: push, at: clock.now())
            enum Next { case wake, none, refuse }
            let next = pending.withLock { pending -> Next in
                if pending.finished { return .refuse }
                pending.marks.append(mark)
                pending.callbacks.append(done)
                defer { pending.writing = true }
                return pending.writing ? .none : .wake
            }
            switch next {
            case .wake: wake.yield()
            case .none: break
            case .refuse: done(Finished())
            }
        }
    }

    /// Writes the queued marks, batch after batch, until `finish()` (or
    /// until the task is cancelled); then refuses later marks, writes what
    /// is left and returns.
    func run() async {
        for await _ in wakeups {
            await drain()
        }
        finish()
        await drain()
    }

    /// Ends `run()` once the queued marks are written; refuses new ones.
    func finish() {
        pending.withLock { $0.finished = true }
        wake.finish()
    }

    private func drain() async {
        while true {
            let batch = pending.withLock { pending -> ([HandOverMark], [@Sendable ((any Error)?) -> Void])? in
                if pending.marks.isEmpty {
                    pending.writing = false
                    return nil
                }
                defer { pending.marks = []; pending.callbacks = [] }
                return (pending.marks, pending.callbacks)
            }
            guard let (marks, callbacks) = batch else { return }
            var failure: (any Error)?
            do { try await store.recordHandOvers(marks) } catch { failure = error }
            for done in callbacks { done(failure) }
        }
    }
}
