import APNs
import HeraldCore
import HeraldStorage
import Logging
import Synchronization
import TLSTransport

/// Records pushes' hand-overs to APNs per device (the crash rule), just
/// before each request's HEADERS are written: marks arriving while one batch
/// is being written form the next, so a busy dispatcher pays one store write
/// (one commit) per batch, not per device.
final class HandOverLog: Sendable {
    private struct Pending {
        var marks: [HandOverMark] = []
        var callbacks: [@Sendable ((any Error)?) -> Void] = []
        var writing = false
    }

    private let store: any HeraldStore
    private let clock: any HeraldClock
    private let pending = Mutex(Pending())

    init(store: any HeraldStore, clock: any HeraldClock) {
        self.store = store
        self.clock = clock
    }

    /// The hook for one device's request (``APNsRequest/willHandOver``).
    func hook(messageID: String, deviceToken: String, push: Int64) -> APNsHandOverHook {
        { [self] done in
            let mark = HandOverMark(messageID: messageID, deviceToken: deviceToken, push: push, at: clock.now())
            let start = pending.withLock { pending in
                pending.marks.append(mark)
                pending.callbacks.append(done)
                defer { pending.writing = true }
                return !pending.writing
            }
            if start { Task { await drain() } }
        }
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
