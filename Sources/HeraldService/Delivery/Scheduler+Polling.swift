public import HeraldStorage
import Logging
import Synchronization

/// Scheduling from a store shared by replicas: no replica holds every
/// pending message; each polls the database's due index and claims what is
/// due in batches, leased to it.
extension Scheduler {
    /// Most messages claimed by one poll.
    static let pollBatch = 256

    /// Runs until `stop()` (like `run(dispatch:)`): polls the shared store
    /// every `pollMilliseconds` at most (sooner when `schedule` saw an earlier
    /// due time, or when a slot frees up after all were taken), claims up to
    /// the free slots' worth of due messages and calls `dispatch` for each.
    /// Beside it, the leases of the claims being dispatched are renewed every
    /// third of the lease, and claims whose lease expired (a dead replica's)
    /// are taken over. Returns once the dispatches in flight have finished.
    public func run(claimed dispatch: @escaping @Sendable (StoredMessage, DispatchLease) async -> Void) async {
        await run(claimedBatches: Self.oneByOne(dispatch))
    }

    /// The same, a poll's claims at a time: one `dispatch` call per poll,
    /// each message with its own lease (`DispatchLease.finish()` when its
    /// dispatch returns: its claim is no longer renewed).
    public func run(claimedBatches dispatch: @escaping @Sendable ([StoredMessage], [DispatchLease]) async -> Void) async {
        guard let shared else { return }
        let held = HeldClaims()
        let (clock, logger) = (clock, logger)
        await withTaskGroup(of: Void.self) { keeper in
            keeper.addTask {
                await Self.keepLeases(shared, held: held, clock: clock, logger: logger) { await self.wake() }
            }
            await withDiscardingTaskGroup { group in
                // Where the next poll's turns start (`DueTurns`): after the
                // last bundle this one claimed from.
                var rotation: String?
                while !stopped && !Task.isCancelled {
                    let wasDeferred = deferred
                    pollLimit = wasDeferred ? max(1, pollLimit / 2) : min(Self.pollBatch, pollLimit * 2)
                    deferred = false
                    let limit = min(slots.free, pollLimit)
                    let rates = throttle.rates()
                    let quota = sharedThrottle.quota(rates: rates, nowMicros: ThrottleSchedule.micros(clock.now()), limit: limit)
                    let claimed = limit > 0 ? await poll(shared, limit: limit, quota: quota, after: rotation) : []
                    rotation = claimed.last?.bundleID ?? rotation
                    if stopped || Task.isCancelled {
                        await giveBack(claimed, to: shared)
                        break
                    }
                    let plan = await pace(claimed, rates: rates)
                    await giveBack(plan.excess, to: shared)
                    let lease = { (message: StoredMessage) -> DispatchLease in
                        held.insert(message.id)
                        return DispatchLease(slots: self.slots) { held.remove(message.id) }
                    }
                    if !plan.free.isEmpty {
                        let free = plan.free
                        slots.take(free.count)
                        let leases = free.map(lease)
                        group.addTask {
                            await dispatch(free, leases)
                            for lease in leases { lease.finish() }
                        }
                    }
                    if !plan.paced.isEmpty {
                        slots.take(plan.paced.count)
                        let paced = plan.paced.map { (at: $0.at, message: $0.message, lease: lease($0.message)) }
                        throttle.waited(paced.map { max(0, $0.at - $0.message.dueAt) })
                        group.addTask { await Self.dispatchAtSlots(paced, clock: clock, shared: shared, dispatch) }
                    }
                    // A full batch: more may be due at once (unless routes are saturated).
                    if limit > 0 && claimed.count == limit && !wasDeferred { continue }
                    await waitForPoll()
                }
            }
            keeper.cancelAll()
        }
    }

    /// One claim of due messages (each throttled bundle at most its
    /// `quota`); a failure is logged and retried at the next poll.
    private func poll(_ shared: any SharedDueStore, limit: Int, quota: [String: Int], after: String?) async -> [StoredMessage] {
        let now = clock.now()
        hints.covered(by: now)
        do {
            return try await shared.claimDue(before: now, limit: limit, now: now, quota: quota, after: after)
        } catch {
            logger.warning("polling the store for due messages failed", metadata: ["error": "\(error)"])
            return []
        }
    }

    /// Books a slot of its bundle's throttle for each claimed message of a
    /// throttled bundle (`rates`), in claim order (transactional first,
    /// then due order): on the shared ledger, so the rate holds for all
    /// replicas together, or here without one. A claim beyond its grant
    /// (another replica booked first) is given back; so is every claim of a
    /// bundle whose booking failed (due again at the next poll).
    private func pace(_ claimed: [StoredMessage], rates: [String: Int]) async -> PacedClaims {
        var plan = PacedClaims()
        var byBundle: [String: [StoredMessage]] = [:]
        for message in claimed {
            if rates[message.bundleID] == nil { plan.free.append(message) } else { byBundle[message.bundleID, default: []].append(message) }
        }
        for (bundle, messages) in byBundle.sorted(by: { $0.key < $1.key }) {
            let rate = rates[bundle] ?? 1, now = clock.now()
            let grant: ThrottleGrant
            if let ledger = throttle.ledger {
                do {
                    grant = try await ledger.takeThrottleSlots(bundleID: bundle, ratePerSecond: rate, count: messages.count, now: now)
                    sharedThrottle.booked(bundle, grant)
                } catch {
                    logger.warning("booking throttle slots failed; the claims wait for the next poll",
                                   metadata: ["bundle_id": "\(bundle)", "error": "\(error)"])
                    plan.excess += messages
                    continue
                }
            } else {
                grant = sharedThrottle.bookLocally(bundle, rate: rate, count: messages.count, nowMicros: ThrottleSchedule.micros(now))
            }
            for (index, message) in messages.enumerated() {
                if index < grant.count { plan.paced.append((grant.milliseconds(of: index), message)) } else { plan.excess.append(message) }
            }
        }
        return plan
    }

    /// Dispatches each paced claim at its slot (those sharing a millisecond
    /// together), without waiting for one dispatch before the next slot;
    /// cancelled while waiting, the claims not yet dispatched are given
    /// back unsent.
    private static func dispatchAtSlots(
        _ paced: [(at: Int64, message: StoredMessage, lease: DispatchLease)], clock: any HeraldClock, shared: any SharedDueStore,
        _ dispatch: @escaping @Sendable ([StoredMessage], [DispatchLease]) async -> Void
    ) async {
        await withDiscardingTaskGroup { group in
            var start = 0
            while start < paced.count {
                var end = start + 1
                while end < paced.count && paced[end].at == paced[start].at { end += 1 }
                let chunk = paced[start..<end]
                do {
                    try await clock.sleep(until: chunk[chunk.startIndex].at)
                } catch {
                    for item in paced[start...] {
                        _ = try? await shared.releaseClaim(id: item.message.id, now: clock.now())
                        item.lease.finish()
                    }
                    return
                }
                group.addTask {
                    await dispatch(chunk.map(\.message), chunk.map(\.lease))
                    for item in chunk { item.lease.finish() }
                }
                start = end
            }
        }
    }

    /// Claims made as the loop stopped: released unsent, due for any replica.
    private func giveBack(_ claimed: [StoredMessage], to shared: any SharedDueStore) async {
        for message in claimed {
            _ = try? await shared.releaseClaim(id: message.id, now: clock.now())
        }
    }

    /// Returns at the next poll time (or the next due time scheduled here,
    /// when sooner), at a wake-up, or when cancelled.
    private func waitForPoll() async {
        drainInbox()
        let until = min(clock.now() + pollMilliseconds, hints.next ?? .max)
        waitingUntil = until
        defer {
            waitingUntil = .max
            drainInbox()
        }
        await sleepOrWake(until: until)
    }

    private func wake() {
        wakeups.signal()
    }

    /// Every third of the lease until cancelled: renews the leases of the
    /// claims held here, then takes over expired claims (their messages
    /// are due again: `wake` polls at once).
    private static func keepLeases(
        _ shared: any SharedDueStore, held: HeldClaims, clock: any HeraldClock, logger: Logger,
        wake: @escaping @Sendable () async -> Void
    ) async {
        let period = max(shared.leaseMilliseconds / 3, 10)
        while !Task.isCancelled {
            do { try await clock.sleep(until: clock.now() + period) } catch { return }
            do {
                let ids = Set(held.ids)
                if !ids.isEmpty {
                    let renewed = try await shared.renewLeases(ids: Array(ids), now: clock.now())
                    // Finished meanwhile is fine; still held but not renewed is not.
                    let lost = held.ids.filter { ids.contains($0) && !renewed.contains($0) }
                    if !lost.isEmpty {
                        logger.warning("claims lost their lease while being sent (taken over by another replica)",
                                       metadata: ["messages": "\(lost.count)", "first": "\(lost[0])"])
                    }
                }
                let recovered = try await shared.takeOverExpired(now: clock.now())
                if !recovered.resumed.isEmpty {
                    logger.warning("took over claims whose lease expired; devices handed to a provider without an answer are UNCONFIRMED, never resent",
                                   metadata: ["messages": "\(recovered.resumed.count)", "unconfirmed_devices": "\(recovered.unconfirmedDevices)"])
                    await wake()
                }
            } catch {
                logger.warning("renewing leases failed", metadata: ["error": "\(error)"])
            }
        }
    }
}

/// The ids of the claims this replica is dispatching (their leases are
/// renewed), counted: a message deferred and released by one dispatch may
/// be claimed again by the next poll before that dispatch has returned.
final class HeldClaims: Sendable {
    private let claims = Mutex<[String: Int]>([:])

    var ids: [String] { claims.withLock { Array($0.keys) } }

    func insert(_ id: String) { claims.withLock { $0[id, default: 0] += 1 } }

    func remove(_ id: String) {
        claims.withLock { claims in
            if let count = claims[id], count > 1 { claims[id] = count - 1 } else { claims[id] = nil }
        }
    }
}
