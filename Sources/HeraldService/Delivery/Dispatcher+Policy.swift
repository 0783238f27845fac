public import HeraldCore
public import HeraldStorage
public import TimeZones

/// What the bundle's delivery policy (SPEC §4b) made of one alert push's
/// devices: those to send now, those held (WAITING, with `notBefore`), those
/// withheld (SUPPRESSED), and the user's counted send reserved for it.
struct PolicyRuling {
    var send: [Device]
    var waiting: [DeviceOutcome] = []
    var suppressed: [DeviceOutcome] = []
    /// Whether a counted send was reserved for the message by this ruling
    /// (given back when the push reaches no device).
    var reserved = false

    /// The earliest planned time of a held device.
    var nextDue: Int64? { waiting.compactMap(\.notBefore).min() }
}

/// Counters the policy's decisions feed (`herald_policy_holds_total`,
/// `herald_policy_suppressed_total`); no-ops by default.
public struct PolicyObserver: Sendable {
    /// A device's push held, by reason.
    public var held: @Sendable (HoldReason) -> Void
    /// A device's push withheld for good, by reason.
    public var suppressed: @Sendable (SuppressReason) -> Void

    public init(held: @escaping @Sendable (HoldReason) -> Void = { _ in }, suppressed: @escaping @Sendable (SuppressReason) -> Void = { _ in }) {
        self.held = held
        self.suppressed = suppressed
    }
}

/// The delivery policy's inputs the dispatcher reads per claim: the bundles'
/// rules (swapped whole by SIGHUP), the zone cache, the ledger that makes
/// caps exact across replicas, and Schedule's grace (a local send time is
/// looked for from window start + grace, as at Schedule).
public struct DispatchPolicy: Sendable {
    public var rules: DeliveryPolicyHolder
    public var zones: ZoneCache
    public var ledger: (any PolicyLedger)?
    public var graceSeconds: Int64
    public var observer: PolicyObserver

    public init(
        rules: DeliveryPolicyHolder = DeliveryPolicyHolder(), zones: ZoneCache = ZoneCache(), ledger: (any PolicyLedger)? = nil,
        graceSeconds: Int64 = DeliveryPolicy.defaultGraceSeconds, observer: PolicyObserver = PolicyObserver()
    ) {
        self.rules = rules
        self.zones = zones
        self.ledger = ledger
        self.graceSeconds = graceSeconds
        self.observer = observer
    }
}

extension Dispatcher {
    /// The policy's word on each device of a claimed alert push (a
    /// traditional send or a context-aware fallback; a hand-off is never
    /// held): the pure verdict per device in its own zone
    /// (``DeliveryPolicy/verdict(rules:zone:push:caps:now:)``: local send
    /// time, quiet hours), then, when some device would go now and the
    /// bundle caps its users, the message's counted send reserved in the
    /// ledger — atomically, across replicas, idempotent by message — which
    /// holds them all until the caps allow or withholds them when no
    /// instant in the window does. One ledger call per capped push, no
    /// read of the user's history first.
    func rule(_ claimed: StoredMessage, message: PushMessage, devices: [Device], now: Int64) async throws -> PolicyRuling {
        let rules = dispatchPolicy.rules.rules(for: claimed.bundleID)
        let push = claimed.policyPush(message, dueAt: claimed.dueAt, graceSeconds: dispatchPolicy.graceSeconds)
        guard !devices.isEmpty, rules?.holdsPushes == true || push.localSendTime != nil else { return PolicyRuling(send: devices) }
        let capped = !message.transactional && (rules.map { !$0.caps.isEmpty || !$0.campaignCaps.isEmpty } ?? false)
        var ruling = PolicyRuling(send: [])
        for device in devices {
            let zone = dispatchPolicy.zones.resolve(device: device.timezone, policy: rules?.timezone)
            // The caps are the ledger's to answer (below, atomically): the
            // verdict here weighs local time and quiet hours. A cap hold
            // that lands in quiet hours is weighed again when it ends.
            switch policy.verdict(rules: rules, zone: zone, push: push, caps: .none, now: now) {
            case .send: ruling.send.append(device)
            case .hold(let until, let reason): ruling.waiting.append(waiting(device, claimed, until: until, reason: reason, now: now))
            case .suppress(let reason): ruling.suppressed.append(suppressed(device, claimed, reason: reason, now: now))
            }
        }
        if capped, !ruling.send.isEmpty, let rules, let reservations {
            let answer = try await reservations.reserve(CapReservation(
                bundleID: claimed.bundleID, userID: claimed.userID, campaignID: claimed.campaignID, messageID: claimed.id, now: now,
                caps: rules.caps.map { CapLimit(count: $0.count, periodMilliseconds: $0.periodMilliseconds) },
                campaignCaps: rules.campaignCaps.map { CapLimit(count: $0.count, periodMilliseconds: $0.periodMilliseconds) },
                notAfter: push.isFallback ? claimed.windowEnd : min(claimed.windowEnd, push.expiresAt ?? .max)))
            switch answer {
            case .reserved:
                ruling.reserved = true
            case .heldUntil(let until):
                ruling.waiting += ruling.send.map { waiting($0, claimed, until: until, reason: .frequencyCap, now: now) }
                ruling.send = []
            case .exhausted:
                ruling.suppressed += ruling.send.map { suppressed($0, claimed, reason: .frequencyCap, now: now) }
                ruling.send = []
            }
        }
        for outcome in ruling.waiting { dispatchPolicy.observer.held(HoldReason(rawValue: outcome.reason ?? "") ?? .throttle) }
        for outcome in ruling.suppressed {
            let reason = SuppressReason(rawValue: outcome.reason ?? "") ?? .frequencyCap
            dispatchPolicy.observer.suppressed(reason)
            logger.debug("push suppressed by the delivery policy", metadata: [
                "message_id": "\(claimed.id)", "device": "\(outcome.deviceToken.prefix(8))…", "reason": "\(reason.rawValue)",
            ])
        }
        return ruling
    }

    /// A hand-off's quiet periods for a device's zone (nil when the bundle
    /// has no quiet hours), from the send to the window end: the app's SDK
    /// must not display inside them (docs/APP-CONTRACT.md, `ctx_quiet`).
    func quietPeriods(_ claimed: StoredMessage, from: Int64) -> (@Sendable (String) -> [QuietSpan])? {
        guard let rules = dispatchPolicy.rules.rules(for: claimed.bundleID), rules.quietHours != nil else { return nil }
        let (zones, windowEnd, policy) = (dispatchPolicy.zones, claimed.windowEnd, policy)
        return { timezone in
            let zone = zones.resolve(device: timezone, policy: rules.timezone)
            return policy.quietPeriods(rules: rules, zone: zone, from: from, to: windowEnd).map { QuietSpan(start: $0.start, end: $0.end) }
        }
    }

    /// Gives back the counted send reserved for a push that reached no
    /// device (never one of a message that reached its user before).
    func releaseReservation(_ claimed: StoredMessage, records: [DeviceOutcome]) async {
        guard let ledger = dispatchPolicy.ledger, !records.contains(where: \.kind.reachedDevice) else { return }
        do {
            _ = try await ledger.releaseCountedSend(bundleID: claimed.bundleID, messageID: claimed.id)
        } catch {
            logger.error("could not give back a counted send (the user's cap counts it)", metadata: [
                "message_id": "\(claimed.id)", "error": "\(error)",
            ])
        }
    }

    /// Holds the claimed message's waiting devices (``HeraldStore/hold(id:from:now:recording:)``:
    /// WAITING outcomes, the claim given back, due at the earliest
    /// `notBefore`) with the push's final outcomes so far, and schedules it then.
    func holdDevices(_ claimed: StoredMessage, from: MessageState, recording outcomes: [DeviceOutcome], until: Int64) async throws {
        if try await store.hold(id: claimed.id, from: from, now: clock.now(), recording: outcomes) {
            await scheduler.noteDeferred()
            await scheduler.schedule(id: claimed.id, dueAt: until, slot: claimed.dueSlot)
        }
        logger.debug("devices held by the delivery policy", metadata: [
            "message_id": "\(claimed.id)", "waiting": "\(outcomes.filter { $0.kind == .waiting }.count)", "until": "\(until)",
        ])
    }

    private func waiting(_ device: Device, _ claimed: StoredMessage, until: Int64, reason: HoldReason, now: Int64) -> DeviceOutcome {
        var outcome = device.decidedOutcome(messageID: claimed.id, kind: .waiting, reason: reason.rawValue, at: now)
        outcome.notBefore = until
        return outcome
    }

    private func suppressed(_ device: Device, _ claimed: StoredMessage, reason: SuppressReason, now: Int64) -> DeviceOutcome {
        device.decidedOutcome(messageID: claimed.id, kind: .suppressed, reason: reason.rawValue, at: now)
    }
}

extension StoredMessage {
    /// This message's alert push due at `dueAt`, as the policy rules see it
    /// (one place for the dispatcher's verdicts and Schedule's `send_at`):
    /// a local send time looked for from window start + grace, the TTL
    /// counted from the planned first send (a fallback's from the window end).
    func policyPush(_ message: PushMessage, dueAt: Int64, graceSeconds: Int64) -> PolicyPush {
        let isFallback = state == .handedOff
        let earliest = max(windowStart, createdAt + graceSeconds * 1000)
        return PolicyPush(
            transactional: message.transactional,
            localSendTime: message.localSendTime.flatMap { TimeOfDay(hour: $0.hour, minute: $0.minute) },
            dueAt: dueAt, earliest: earliest, windowStart: windowStart, windowEnd: windowEnd,
            expiresAt: (isFallback ? windowEnd : earliest) + Int64(message.ttl.rawValue) * 1000, isFallback: isFallback)
    }
}
