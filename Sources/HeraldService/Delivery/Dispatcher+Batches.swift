import HeraldCore
public import HeraldStorage
import Logging
import Synchronization

// A due batch end to end: one claim write for the batch, the users' devices
// read once, every claimed message's push at once (route admission as for
// one), and the pushes' ends written together (one write in flight per
// batch; the ends that queue meanwhile are the next write).

extension Dispatcher {
    /// Runs a due batch (the scheduler's ids, one lease each): claims every
    /// id still waiting in one write, gives the others' leases back, then
    /// dispatches the claimed ones (`dispatch(claimed:leases:)`). When the
    /// batch claim fails as a whole, each id is dispatched alone (its own
    /// claim), so one failing message does not hold the others back.
    public func dispatch(batch ids: [String], leases: [DispatchLease]) async {
        let claimed: [StoredMessage]
        do {
            claimed = try await store.claim(ids: ids, now: clock.now())
        } catch {
            logger.warning("claiming a due batch failed: claiming its messages one by one", metadata: [
                "messages": "\(ids.count)", "error": "\(error)",
            ])
            await Scheduler.oneByOne { id, lease in await self.dispatch(id, lease: lease) }(ids, leases)
            return
        }
        var leaseOf: [String: DispatchLease] = [:]
        leaseOf.reserveCapacity(ids.count)
        for (id, lease) in zip(ids, leases) { leaseOf[id] = lease }
        var claimedLeases: [DispatchLease] = []
        claimedLeases.reserveCapacity(claimed.count)
        for message in claimed { claimedLeases.append(leaseOf.removeValue(forKey: message.id) ?? .none) }
        for lease in leaseOf.values { lease.finish() }  // cancelled, superseded, claimed elsewhere…
        await dispatch(claimed: claimed, leases: claimedLeases)
    }

    /// Runs claimed messages' next actions at once (a due batch, or a
    /// poll's claims): each as `dispatch(claimed:lease:)`, with the users'
    /// devices read in one go and the pushes' ends written together
    /// (``PushEnds``: the ends queued while one write is in flight form the
    /// next). Each lease's `finish()` is called when its message's dispatch
    /// returns; this returns once every end is written.
    public func dispatch(claimed batch: [StoredMessage], leases: [DispatchLease]) async {
        guard !batch.isEmpty else { return }
        var users: [DeviceUser: [Device]]?
        let wanted = Array(Set(batch.map { DeviceUser(bundleID: $0.bundleID, platform: $0.platform, userID: $0.userID) }))
        do {
            let read = try await store.devices(of: wanted)
            users = Dictionary(uniqueKeysWithValues: zip(wanted, read))
        } catch {
            // Each push reads its own (and fails alone if the store does).
            logger.warning("reading a batch's devices failed", metadata: ["error": "\(error)"])
        }
        let ends = PushEnds()
        await withDiscardingTaskGroup { group in
            for (message, lease) in zip(batch, leases) {
                let devices = users?[DeviceUser(bundleID: message.bundleID, platform: message.platform, userID: message.userID)]
                group.addTask {
                    do {
                        try await self.deliver(message, lease: lease, devices: devices, ends: ends)
                    } catch {
                        self.logger.error("dispatch failed", metadata: ["message_id": "\(message.id)", "error": "\(error)"])
                    }
                    lease.finish()
                }
            }
        }
    }

    /// Queues a push's end in its batch; the first end queued while no
    /// write is in flight writes it, and then whatever queued meanwhile,
    /// until nothing is left.
    func queue(_ end: Transition, in ends: PushEnds) async {
        guard ends.append(end) else { return }  // the write in flight takes it next
        while let queued = ends.next() { await write(queued) }
    }

    /// Writes queued push ends in one store write; when that fails, one by
    /// one, so one failing end does not lose the others.
    private func write(_ queued: [Transition]) async {
        guard !queued.isEmpty else { return }
        do {
            let applied = try await store.transitions(queued)
            for (end, applied) in zip(queued, applied) { logEnd(end, applied: applied) }
            return
        } catch {
            logger.warning("writing a batch of push ends failed: writing them one by one", metadata: [
                "pushes": "\(queued.count)", "error": "\(error)",
            ])
        }
        for end in queued {
            do {
                logEnd(end, applied: try await store.transitions([end])[0])
            } catch {
                logger.error("dispatch failed", metadata: ["message_id": "\(end.id)", "error": "\(error)"])
            }
        }
    }

    /// What `finish` logs once a push's end is written.
    func logEnd(_ end: Transition, applied: Bool) {
        if !applied {
            logger.warning("state changed during send", metadata: ["message_id": "\(end.id)", "wanted": "\(end.to.rawValue)"])
        } else if ![.sent, .handedOff, .displayed].contains(end.to) {
            logger.info("message ended", metadata: [
                "message_id": "\(end.id)", "state": "\(end.to.rawValue)", "reason": "\(end.lastError ?? "")",
            ])
        }
    }
}

/// A batch's push ends waiting to be written (`Dispatcher.queue(_:in:)`):
/// at most one write in flight; what queues meanwhile is the next one.
final class PushEnds: Sendable {
    private struct State {
        var queued: [Transition] = []
        var writing = false
    }

    private let state = Mutex(State())

    /// Queues `end`; true when the caller is to write (none in flight).
    func append(_ end: Transition) -> Bool {
        state.withLock { state in
            state.queued.append(end)
            defer { state.writing = true }
            return !state.writing
        }
    }

    /// The ends to write next, emptying the queue; nil (the writer is done)
    /// when none are queued.
    func next() -> [Transition]? {
        state.withLock { state in
            guard !state.queued.isEmpty else {
                state.writing = false
                return nil
            }
            defer { state.queued = [] }
            return state.queued
        }
    }
}
