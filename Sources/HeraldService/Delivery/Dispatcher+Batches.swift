import HeraldCore
public import HeraldStorage
import Logging
import Synchronization

// A due batch end to end: one claim write for the batch, the users' devices
// read once, every claimed message's push at once (route admission as for
// one), and the pushes' ends written together, a few writes per batch.

extension Dispatcher {
    /// Ends queued this long at most before they are written (while other
    /// pushes of the batch are still under way).
    static let endFlushInterval: Duration = .milliseconds(5)
    /// Queued ends written at once, without waiting for the interval.
    static let endFlushCount = 64

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
            await withDiscardingTaskGroup { group in
                for (id, lease) in zip(ids, leases) {
                    group.addTask {
                        await self.dispatch(id, lease: lease)
                        await lease.finish()
                    }
                }
            }
            return
        }
        var leaseOf: [String: DispatchLease] = [:]
        leaseOf.reserveCapacity(ids.count)
        for (id, lease) in zip(ids, leases) { leaseOf[id] = lease }
        var claimedLeases: [DispatchLease] = []
        claimedLeases.reserveCapacity(claimed.count)
        for message in claimed { claimedLeases.append(leaseOf.removeValue(forKey: message.id) ?? .none) }
        for lease in leaseOf.values { await lease.finish() }  // cancelled, superseded, claimed elsewhere…
        await dispatch(claimed: claimed, leases: claimedLeases)
    }

    /// Runs claimed messages' next actions at once (a due batch, or a
    /// poll's claims): each as `dispatch(claimed:lease:)`, with the users'
    /// devices read in one go and the pushes' ends written together — every
    /// `endFlushInterval`, or once `endFlushCount` are queued, and when the
    /// last push has returned. Each lease's `finish()` is called when its
    /// message's dispatch returns.
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
        await withTaskGroup(of: Bool.self) { group in
            for (message, lease) in zip(batch, leases) {
                let devices = users?[DeviceUser(bundleID: message.bundleID, platform: message.platform, userID: message.userID)]
                group.addTask {
                    do {
                        try await self.deliver(message, lease: lease, devices: devices, ends: ends)
                    } catch {
                        self.logger.error("dispatch failed", metadata: ["message_id": "\(message.id)", "error": "\(error)"])
                    }
                    await lease.finish()
                    return false
                }
            }
            var running = batch.count
            group.addTask { try? await Task.sleep(for: Self.endFlushInterval); return true }
            while let tick = await group.next() {
                if tick {
                    if running > 0 && !Task.isCancelled { group.addTask { try? await Task.sleep(for: Self.endFlushInterval); return true } }
                } else {
                    running -= 1
                    if running == 0 { group.cancelAll() }  // the ticker; every push has returned
                    if ends.count < Self.endFlushCount && running > 0 { continue }
                }
                await write(ends.take())
            }
        }
        await write(ends.take())
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

/// A batch's push ends waiting to be written (`Dispatcher.dispatch(claimed:leases:)`).
final class PushEnds: Sendable {
    private let queued = Mutex<[Transition]>([])

    var count: Int { queued.withLock { $0.count } }

    func append(_ end: Transition) { queued.withLock { $0.append(end) } }

    /// The queued ends, emptying the queue.
    func take() -> [Transition] { queued.withLock { queued in defer { queued = [] }; return queued } }
}
