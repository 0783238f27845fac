import HeraldCore
import HeraldPrimitives
public import HeraldStorage
public import Logging
public import PushProviders
import Synchronization

/// Carries out a due message's next action: the alert push (traditional, or
/// the context-aware fallback at window end) or the context-aware handoff
/// (a background push at window start); and revoke pushes for cancelled
/// handed-off messages. What to do — which push, to which devices, until
/// when, and how the message ends — is ``DeliveryPolicy``'s to decide; this
/// class carries it out.
///
/// Every push is claimed in the store first (so a crash mid-send is visible
/// at restart and the message is never sent twice), rendered per device in
/// the device's locale and sent by the device platform's provider
/// (``ProviderRegistry``), and its outcome recorded per device before the
/// message's state changes.
public final class Dispatcher: Sendable {
    /// Which push is sent (the policy's ``DeliveryPush``).
    typealias Push = DeliveryPush

    /// One device's result, in no provider's words.
    typealias DeviceResult = ProviderResult

    /// Per-route (per provider client) admission limits.
    public struct RouteLimits: Sendable {
        /// Messages sending through one route at once.
        public var inFlight: Int
        /// Messages waiting for one of those; each holds a global dispatch
        /// slot, so keep this well below the scheduler's slots (512): a hung
        /// route can hold at most this many of them.
        public var queue: Int

        public init(inFlight: Int = 256, queue: Int = 64) {
            self.inFlight = inFlight
            self.queue = queue
        }
    }

    let store: any HeraldStore
    let providers: ProviderRegistry
    let clock: any HeraldClock
    let scheduler: Scheduler
    let logger: Logger
    let routeLimits: RouteLimits
    /// The wire layer's decoder of stored requests (`StoredRequest.decode`).
    let decode: StoredRequestDecoder
    let handOvers: HandOverLog
    /// Every delivery decision (``DeliveryPolicy``); this class carries them out.
    let policy = DeliveryPolicy()
    /// The bundles' delivery-policy rules and what they read (SPEC §4b).
    let dispatchPolicy: DispatchPolicy
    /// The ledger's reservations, batched across the pushes sent at once.
    let reservations: ReservationBatcher?
    private let gates = Mutex<[ObjectIdentifier: RouteGate]>([:])

    public init(
        store: any HeraldStore, providers: ProviderRegistry, clock: any HeraldClock, scheduler: Scheduler, logger: Logger,
        routeLimits: RouteLimits = RouteLimits(), decode: @escaping StoredRequestDecoder, policy: DispatchPolicy? = nil
    ) {
        self.decode = decode
        let dispatchPolicy = policy ?? DispatchPolicy(ledger: store as? any PolicyLedger)
        self.dispatchPolicy = dispatchPolicy
        self.reservations = dispatchPolicy.ledger.map { ReservationBatcher(ledger: $0) }
        self.store = store
        self.providers = providers
        self.clock = clock
        self.scheduler = scheduler
        self.logger = logger
        self.routeLimits = routeLimits
        self.handOvers = HandOverLog(store: store, clock: clock)
    }

    /// Writes the hand-over marks of the pushes in flight (``HandOverLog``)
    /// until `finish()`: run it for as long as pushes may go out (the
    /// delivery service does); a push's request waits for its mark.
    public func run() async {
        await handOvers.run()
    }

    /// Ends `run()` once the queued marks are written; call it after the
    /// last dispatch returned (a later push is refused, unsent).
    public func finish() {
        handOvers.finish()
    }

    /// Runs the next action of message `id`, if it still has one.
    ///
    /// The claim is the read: it returns the message only if it was still
    /// waiting (SCHEDULED, or HANDED_OFF for the fallback) and marks it in
    /// flight, so a cancelled, superseded or displayed message is skipped.
    /// `lease` (the scheduler's global slot) is given back once the
    /// message's routes admitted it.
    public func dispatch(_ id: String, lease: DispatchLease = .none) async {
        do {
            let now = clock.now()
            var claimed = try await store.claim(id: id, from: .scheduled, now: now)
            if claimed == nil { claimed = try await store.claim(id: id, from: .handedOff, now: now) }
            if let claimed { try await deliver(claimed, lease: lease) }
        } catch {
            logger.error("dispatch failed", metadata: ["message_id": "\(id)", "error": "\(error)"])
        }
    }

    /// Runs the next action of a message the scheduler already claimed
    /// (`SharedDueStore.claimDue`): as `dispatch(_:lease:)` after its claim.
    public func dispatch(claimed: StoredMessage, lease: DispatchLease = .none) async {
        do {
            try await deliver(claimed, lease: lease)
        } catch {
            logger.error("dispatch failed", metadata: ["message_id": "\(claimed.id)", "error": "\(error)"])
        }
    }

    /// The claimed message's next action, by its (pre-claim) state
    /// (``DeliveryPolicy``). In a batch (`dispatch(claimed:leases:)`):
    /// `devices` read for it already, its end queued in `ends` (unless a
    /// follow-up depends on it).
    func deliver(_ claimed: StoredMessage, lease: DispatchLease, devices read: [Device]? = nil, ends: PushEnds? = nil) async throws {
        let facts = claimed.deliveryFacts
        guard policy.push(for: facts) != nil else {
            throw StoreError.illegalTransition(from: claimed.state, to: .sent, id: claimed.id)
        }
        let from = claimed.state
        let now = clock.now()
        providers.lateness(now - claimed.dueAt)
        let pushStart = claimed.pushStartedAt ?? now
        // A push resumed after a crash or a deferral: the devices with an
        // outcome for it (sent, UNCONFIRMED, failed…) are done; never resend.
        var prior: [DeviceOutcome] = []
        if policy.isResumed(pushStart: pushStart, sendingSince: claimed.sendingSince) {
            prior = policy.history(try await store.outcomes(messageID: claimed.id), pushStart: pushStart)
        }
        let decoded = Result { () throws -> PushMessage in try decode(claimed.request, claimed.idempotencyKey) }
        let plan: PushPlan
        switch policy.decide(facts, request: decoded, history: prior, now: now) {
        case .send(let sending)?:
            plan = sending
        case .finish(let push, let otherwise)?:
            try await conclude(claimed, from: from, push: push, prior: prior, otherwise: otherwise, ends: ends)
            return
        case .defer(let until, let reason)?:
            try await hold(claimed.id, slot: claimed.dueSlot, until: until, reason: reason)
            return
        case nil:
            throw StoreError.illegalTransition(from: claimed.state, to: .sent, id: claimed.id)
        }
        guard case .success(let pushMessage) = decoded else { return }  // decide finished it
        let push = plan.push
        var devices: [Device]
        if let read {
            devices = read
        } else {
            devices = try await store.devices(bundleID: claimed.bundleID, platform: claimed.platform, userID: claimed.userID)
        }
        // The policy's word per device: send, skip (done), finish unsent, hold.
        var decided: [DeviceOutcome] = []
        var heldUntil: (at: Int64, reason: HoldReason)?
        // Filtered only when some device is not sent: the batch's device
        // array is shared, and filtering copies every device (their strings'
        // counts, touched by every push of the user at once).
        let allSent = devices.allSatisfy { if case .send = policy.action(for: $0, in: plan) { true } else { false } }
        if !allSent {
            devices.removeAll { device in
                switch policy.action(for: device, in: plan) {
                case .send: return false
                case .skip: return true
                case .finish(let kind, let reason):
                    decided.append(device.decidedOutcome(messageID: claimed.id, kind: kind, reason: reason, at: now))
                    return true
                case .defer(let until, let reason):
                    if heldUntil.map({ until < $0.at }) ?? true { heldUntil = (until, reason) }
                    return true
                }
            }
        }
        if let heldUntil {
            // A per-device hold of the push-level rules (none today): the
            // whole message waits when nothing else is decided.
            assert(devices.isEmpty && decided.isEmpty, "a device action hold beside a send is not carried out")
            if devices.isEmpty && decided.isEmpty {
                try await hold(claimed.id, slot: claimed.dueSlot, until: heldUntil.at, reason: heldUntil.reason)
                return
            }
        }
        // The bundle's delivery policy (SPEC §4b) on an alert push: each
        // device sent now, held (WAITING) or withheld (SUPPRESSED).
        var ruling = PolicyRuling(send: devices)
        if push == .alert {
            ruling = try await rule(claimed, message: pushMessage, devices: devices, now: now)
            devices = ruling.send
            decided += ruling.suppressed
        }
        if let until = ruling.nextDue, devices.isEmpty {
            try await holdDevices(claimed, from: from, recording: decided + ruling.waiting, until: until)
            return
        }
        guard !devices.isEmpty || !decided.isEmpty else {
            try await conclude(claimed, from: from, push: push, prior: prior,
                               otherwise: policy.noDevices(facts, bundleID: claimed.bundleID), ends: ends)
            return
        }
        let deadline = Timestamp(timeIntervalSince1970: Double(plan.deadline) / 1000)
        let singleAttempt = plan.singleAttempt

        var unrouted: [(Device, DeviceResult)] = []
        var routes: [ObjectIdentifier: (route: any PushRoute, devices: [Device])] = [:]
        for device in devices {
            switch providers.route(bundleID: claimed.bundleID, device: device) {
            case .success(let route): routes[route.admission, default: (route, [])].devices.append(device)
            case .failure(let why): unrouted.append((device, .failed(why.description)))
            }
        }
        // Deferred: the counted send reserved for this push goes back while
        // the claim is still held — given back after, another replica could
        // claim the message, find the reservation, send, and then lose its
        // count to this late release (a cap leak across replicas).
        guard let entered = await admit(claimed.id, lane: claimed.dueSlot.lane, to: Array(routes.keys), beforeDeferring: {
            if ruling.reserved { await self.releaseReservation(claimed, records: prior) }
        }) else { return }
        lease.release()  // admitted: the send holds only its routes' slots

        // Rendered by each route's provider before the sends (once per locale where it can).
        let clock = clock
        var content = ProviderPush(
            kind: push.providerKind, message: pushMessage, bundleID: claimed.bundleID, idempotencyKey: claimed.idempotencyKey,
            sendTime: Timestamp(milliseconds: clock.now()), windowEnd: Timestamp(milliseconds: claimed.windowEnd),
            deadline: deadline, singleAttempt: singleAttempt, now: { clock.now() })
        if push == .handoff { content.quiet = quietPeriods(claimed, from: content.sendTime.milliseconds) }
        var sends: [(device: Device, prepared: any PreparedPush)] = []
        for (route, routed) in routes.values {
            sends += zip(routed, route.prepare(content, for: routed)).map { ($0, $1) }
        }
        let id = claimed.id
        let sent: [(Device, DeviceResult)]
        if sends.count == 1 {
            sent = [(sends[0].device, await send(sends[0].prepared, to: sends[0].device, messageID: id, push: pushStart))]
        } else {
            sent = await withTaskGroup(of: (Device, DeviceResult).self) { group in
                for one in sends {
                    group.addTask { (one.device, await self.send(one.prepared, to: one.device, messageID: id, push: pushStart)) }
                }
                var results: [(Device, DeviceResult)] = []
                for await result in group { results.append(result) }
                return results
            }
        }
        for gate in entered { await reschedule(gate.leave(now: clock.now())) }
        let finished = (unrouted + sent).filter { if case .interrupted = $0.1 { false } else { true } }
        let outcomes = decided + finished.map { device, result in
            result.outcome(messageID: claimed.id, device: device, delivered: push.delivered, at: clock.now())
        }
        if finished.count < unrouted.count + sent.count {
            // Stopped mid-push: keep the answers, leave the claim. The next
            // start resolves it by the crash rule (handed over without an
            // answer: UNCONFIRMED; never handed over: sent then).
            for outcome in outcomes { try await store.recordOutcome(outcome) }
            return
        }
        if ruling.reserved { await releaseReservation(claimed, records: prior + outcomes) }
        if let until = ruling.nextDue {
            // Devices still held: the push stays open until they are sent.
            try await holdDevices(claimed, from: from, recording: outcomes + ruling.waiting, until: until)
            return
        }
        try await conclude(claimed, from: from, push: push, prior: prior, recording: outcomes,
                           otherwise: policy.noDevices(facts, bundleID: claimed.bundleID), ends: ends)
    }

    /// Admits message `id` (of due lane `lane`) on each of its routes. When
    /// one is saturated, pauses the lane when the route says so (until the
    /// route answers: the scheduler stops claiming what it would turn
    /// away), runs `beforeDeferring`, gives the claim back, parks the
    /// message on that route (it is rescheduled when the route has room)
    /// and returns nil. A message on several routes never waits (holding
    /// one route's slot while waiting for another's could deadlock two
    /// such messages).
    private func admit(
        _ id: String, lane: String, to routes: [ObjectIdentifier], beforeDeferring: () async -> Void
    ) async -> [RouteGate]? {
        var entered: [(gate: RouteGate, ticket: Int?)] = []
        var saturated: RouteGate?
        for route in routes {
            let gate = self.gate(route)
            switch gate.enter(lane: lane, now: clock.now()) {
            case .go:
                entered.append((gate, nil))
            case .wait(let ticket) where routes.count == 1:
                entered.append((gate, ticket))
            case .wait(let ticket):
                await reschedule(gate.leave(ticket: ticket, now: clock.now()))
                saturated = gate
            case .full(let pauseLane):
                if let until = pauseLane { await scheduler.pause(lane: lane, until: until) }
                saturated = gate
            }
            if saturated != nil { break }
        }
        if saturated == nil, let waiting = entered.first(where: { $0.ticket != nil }), let ticket = waiting.ticket {
            // Single route (see above): wait for it, or be sent back when it stalls.
            if await waiting.gate.wait(ticket) { return [waiting.gate] }
            entered = []
            saturated = waiting.gate
        }
        guard let saturated else { return entered.map(\.gate) }
        for entry in entered { await reschedule(entry.gate.leave(ticket: entry.ticket, now: clock.now())) }
        await beforeDeferring()
        do {
            if try await store.releaseClaim(id: id, now: clock.now()) {
                await scheduler.noteDeferred()
                await reschedule(saturated.park(id))
            }
            logger.debug("route saturated: message deferred until it has room", metadata: ["message_id": "\(id)"])
        } catch {
            logger.error("could not defer a message (it resumes at the next start)", metadata: [
                "message_id": "\(id)", "error": "\(error)",
            ])
        }
        return nil
    }

    private func gate(_ route: ObjectIdentifier) -> RouteGate {
        gates.withLock { gates in
            if let gate = gates[route] { return gate }
            let gate = RouteGate(limit: routeLimits.inFlight, queueLimit: routeLimits.queue)
            gates[route] = gate
            return gate
        }
    }

    /// Carries out what a route's freed slot hands on: its parked messages
    /// due now, its paused lanes resumed.
    private func reschedule(_ resumed: RouteGate.Resumed) async {
        guard !resumed.ids.isEmpty || !resumed.lanes.isEmpty else { return }
        let now = clock.now()
        for id in resumed.ids { await scheduler.schedule(id: id, dueAt: now) }
        if !resumed.lanes.isEmpty { await scheduler.resume(lanes: resumed.lanes) }
    }

    /// Holds message `id` unsent until `until` (``DeliveryDecision/defer(until:reason:)``):
    /// gives its claim back and schedules it then.
    private func hold(_ id: String, slot: DueSlot, until: Int64, reason: HoldReason) async throws {
        if try await store.releaseClaim(id: id, now: clock.now()) {
            await scheduler.noteDeferred()
            await scheduler.schedule(id: id, dueAt: until, slot: slot)
        }
        logger.debug("message held", metadata: ["message_id": "\(id)", "reason": "\(reason.rawValue)", "until": "\(until)"])
    }

    /// Ends the push as the policy says from every device's outcome for it
    /// (`prior`, already recorded, and `outcomes`, recorded now;
    /// ``DeliveryPolicy/end(of:for:records:otherwise:)``). With `ends`, the
    /// end is queued there, except a hand-off's (what follows depends on it).
    private func conclude(
        _ claimed: StoredMessage, from: MessageState, push: Push, prior: [DeviceOutcome],
        recording outcomes: [DeviceOutcome] = [], otherwise: MessageEnd, ends: PushEnds?
    ) async throws {
        let all = prior + outcomes
        let facts = claimed.deliveryFacts
        let end = policy.end(of: push, for: facts, records: all, otherwise: otherwise)
        guard end.state == .sent || end.state == .handedOff else {
            try await finish(claimed, from: from, to: end.state, error: end.error, recording: outcomes, ends: ends)
            return
        }
        let reached = all.filter(\.kind.reachedDevice)
        let providerMessageID = reached.lazy.compactMap(\.providerMessageID).first
        if end.state == .sent {
            try await finish(claimed, from: from, to: .sent, providerMessageID: providerMessageID, error: nil, recording: outcomes, ends: ends)
        } else {
            try await finish(claimed, from: from, to: .handedOff, dueAt: end.dueAt, providerMessageID: providerMessageID, error: nil,
                             recording: outcomes)
            // The app may have reported it displayed while this was recorded.
            let shown = try await store.outcomes(messageID: claimed.id).contains { $0.kind == .displayed }
            switch policy.afterHandoff(of: facts, displayed: shown) {
            case .displayed: try await finish(claimed, from: .handedOff, to: .displayed, error: nil)
            case .fallback(let at): await scheduler.schedule(id: claimed.id, dueAt: at, slot: claimed.dueSlot)
            }
        }
        logger.info("delivered", metadata: [
            "message_id": "\(claimed.id)", "push": "\(push.rawValue)", "devices": "\(reached.count)/\(all.count)",
            "provider_message_id": "\(providerMessageID ?? "-")",
        ])
    }

    /// Sends one device's prepared push, its hand-over mark recorded just
    /// before the request leaves (with `push`, the push's start: nil for a
    /// revoke, which has no crash rule), and drops the device's registration
    /// when the provider's refusal says so.
    func send(_ prepared: any PreparedPush, to device: Device, messageID: String?, push: Int64?) async -> DeviceResult {
        let hook = messageID.flatMap { id in push.map { handOvers.hook(messageID: id, deviceToken: device.deviceToken, push: $0) } }
        let result = await prepared.send(willHandOver: hook)
        if case .refused(_, _, _, _, .ifRegisteredBefore(let before)) = result {
            _ = try? await store.removeDevice(bundleID: device.bundleID, deviceToken: device.deviceToken, ifRegisteredBefore: before)
        }
        return result
    }

    /// Moves the message on and records the devices' results, in one write
    /// (with `ends`: written with the batch's other ends, `queue(_:in:)`).
    private func finish(
        _ message: StoredMessage, from: MessageState, to: MessageState,
        dueAt: Int64? = nil, providerMessageID: String? = nil, error: String?, recording outcomes: [DeviceOutcome] = [],
        ends: PushEnds? = nil
    ) async throws {
        let end = Transition(id: message.id, from: from, to: to, dueAt: dueAt, providerMessageID: providerMessageID, lastError: error,
                             now: clock.now(), outcomes: outcomes, subject: outcomes.isEmpty ? nil : EventSubject(message))
        if let ends {
            await queue(end, in: ends)
            return
        }
        let applied = try await store.transition(
            id: end.id, from: end.from, to: end.to, dueAt: end.dueAt, providerMessageID: end.providerMessageID, lastError: end.lastError,
            now: end.now, recording: end.outcomes)
        logEnd(end, applied: applied)
    }

}
