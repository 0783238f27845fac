public import HeraldPrimitives

/// Every delivery rule, in one pure place: given a message, its devices,
/// their outcomes for the push under way and `now`, what to do — send now,
/// hold until a time with a reason, or finish with an outcome — and, from
/// the devices' results, the message's next state. No I/O; time is passed
/// in. The dispatcher carries the answers out (docs/INTERNALS.md,
/// "Delivery policy").
///
/// A new rule (SPEC §4b: quiet hours, local send time, caps, throttle)
/// goes into ``decide(_:request:history:now:)`` (the whole message) or
/// ``action(for:in:)`` (one device), answering with a
/// ``DeviceAction/defer(until:reason:)`` or a
/// ``DeviceAction/finish(_:reason:)``.
public struct DeliveryPolicy: Sendable {
    /// The default cancellation grace: 30 seconds.
    public static let defaultGraceSeconds: Int64 = 30
    /// How late the scheduler itself may be: a push is not expired before
    /// this, even with TTL 0 ("now or never" allows the scheduler a minute).
    public static let schedulerSlackMilliseconds: Int64 = 60_000
    /// The shortest retry deadline of a push (and a hand-off's, when its
    /// window is nearly over).
    public static let minimumRetryMilliseconds: Int64 = 10_000

    /// Creates the policy (no configurable rule yet).
    public init() {}

    // MARK: Schedule time

    /// When a message's pushes are due (`ScheduleResponse.send_at`).
    ///
    /// - Traditional: one alert due at max(window.start, now + grace).
    /// - Context-aware: the background hand-off is due at max(window.start,
    ///   now + grace) too — the grace is the cancellation window, and a
    ///   cancelled hand-off would need a revoke, so we never hand off sooner;
    ///   the alert fallback is due at window.end. If the hand-off cannot be
    ///   sent before the window ends (start + grace ≥ end) the hand-off is
    ///   pointless, and the plan degrades to a traditional alert at
    ///   max(start, now + grace) with no fallback.
    public static func plan(
        method: DeliveryMethod,
        window: DeliveryWindow,
        now: Timestamp,
        graceSeconds: Int64 = defaultGraceSeconds
    ) -> DeliveryPlan {
        let earliest = now.adding(seconds: graceSeconds)
        let sendAt = max(window.start, earliest)
        switch method {
        case .traditional:
            return DeliveryPlan(firstPush: .alert, sendAt: sendAt, fallbackAt: nil)
        case .contextAware:
            guard sendAt < window.end else {
                return DeliveryPlan(firstPush: .alert, sendAt: sendAt, fallbackAt: nil)
            }
            return DeliveryPlan(firstPush: .background, sendAt: sendAt, fallbackAt: window.end)
        }
    }

    // MARK: Dispatch time

    /// The push a message claimed from `message.state` sends: SCHEDULED
    /// context-aware due before its window ends hands off (the schedule-time
    /// plan degraded it to an alert otherwise); any other SCHEDULED sends the
    /// alert; HANDED_OFF (not displayed by window end) sends the fallback
    /// alert. Nil for any other state: it has no push.
    public func push(for message: DeliveryFacts) -> DeliveryPush? {
        switch message.state {
        case .scheduled: message.method == .contextAware && message.dueAt < message.windowEnd ? .handoff : .alert
        case .handedOff: .alert
        default: nil
        }
    }

    /// Whether the claimed push (begun at `pushStart`) resumes one begun
    /// before this claim (after a crash or a deferral): only then can its
    /// devices have outcomes for it already.
    public func isResumed(pushStart: Int64, sendingSince: Int64?) -> Bool {
        pushStart != sendingSince
    }

    /// The outcomes recorded for the push that began at `pushStart`: its
    /// history (earlier pushes' outcomes do not count). A WAITING record
    /// (a device held by the delivery policy) is not final and is left
    /// out, so the held device is sent when the message is due again.
    public func history<R: DeliveryRecord>(_ outcomes: [R], pushStart: Int64) -> [R] {
        outcomes.filter { $0.at >= pushStart && $0.kind.isFinal }
    }

    /// The message-level decision for a claimed message: nil when its state
    /// has no push (``push(for:)``).
    ///
    /// - The stored request does not decode: FAILED.
    /// - Later than max(TTL, ``schedulerSlackMilliseconds``) past due:
    ///   EXPIRED.
    /// - Otherwise send: retries until the TTL ends (at least
    ///   ``minimumRetryMilliseconds``; a hand-off also stops at the window
    ///   end, but gets the minimum when the window is nearly over); TTL 0 is
    ///   one attempt.
    ///
    /// A finished push still ends from the outcomes it has (`history`): a
    /// resumed push that reached a device is SENT, not FAILED.
    public func decide(
        _ message: DeliveryFacts, request: Result<PushMessage, any Error>, history: some Sequence<some DeliveryRecord>, now: Int64
    ) -> DeliveryDecision? {
        guard let push = push(for: message) else { return nil }
        let pushMessage: PushMessage
        switch request {
        case .success(let decoded): pushMessage = decoded
        case .failure(let error):
            return .finish(push: push, otherwise: MessageEnd(.failed, error: "stored request does not decode: \(error)"))
        }
        let ttl = Int64(pushMessage.ttl.rawValue) * 1000
        if now - message.dueAt > max(ttl, Self.schedulerSlackMilliseconds) {
            return .finish(push: push, otherwise: MessageEnd(.expired, error: "TTL ran out before the push could be sent"))
        }
        var deadline = now + max(ttl, Self.minimumRetryMilliseconds)
        if push == .handoff { deadline = min(deadline, max(message.windowEnd, now + Self.minimumRetryMilliseconds)) }
        var finished = Set<String>()
        for record in history where record.kind.isFinal { finished.insert(record.deviceToken) }
        return .send(PushPlan(
            push: push, deadline: deadline, singleAttempt: ttl == 0, platformEnabled: pushMessage.isEnabled(on: message.platform),
            finished: finished))
    }

    /// One device's action for a push to send: a device with an outcome for
    /// it already is never sent it again; a platform disabled by its
    /// override (`"enabled": false`) fails the device unsent.
    @inlinable
    public func action(for device: some DeliveryDevice, in plan: PushPlan) -> DeviceAction {
        if !plan.finished.isEmpty, plan.finished.contains(device.deviceToken) { return .skip }
        if !plan.platformEnabled { return .finish(.failed, reason: "render: \(RenderError.disabled(device.platform))") }
        return .send
    }

    /// The end of a push with nothing sent and no device's outcome for it:
    /// the user had no device for the platform when it was due.
    public func noDevices(_ message: DeliveryFacts, bundleID: String) -> MessageEnd {
        let platform = message.platform == .ios ? "iOS" : "Android"
        return MessageEnd(.noDevices, error: "no registered \(platform) device for this user in \(bundleID) when the push was due")
    }

    /// How a push ends from every device's outcome for it (`records`):
    /// any device reached (sent, handed off, UNCONFIRMED) makes it a
    /// success — SENT, or HANDED_OFF with the fallback due at window end —
    /// never FAILED (SUPPRESSED devices beside a SENT one: SENT); with no
    /// outcome at all, `otherwise`; every device SUPPRESSED by the delivery
    /// policy: SUPPRESSED with each device's reason; every device expired:
    /// EXPIRED; else FAILED with each device's reason. WAITING records
    /// (not final) are left out.
    public func end<R: DeliveryRecord>(
        of push: DeliveryPush, for message: DeliveryFacts, records all: [R], otherwise: MessageEnd
    ) -> MessageEnd {
        let records = all.contains(where: { !$0.kind.isFinal }) ? all.filter { $0.kind.isFinal } : all
        if records.contains(where: { $0.kind.reachedDevice }) {
            return push == .alert ? MessageEnd(.sent) : MessageEnd(.handedOff, dueAt: message.windowEnd)
        }
        if records.isEmpty { return otherwise }
        if records.allSatisfy({ $0.kind == .suppressed }) {
            let reasons = records.map { "\($0.deviceToken.prefix(8))…: \($0.reason ?? $0.kind.rawValue)" }.joined(separator: "; ")
            return MessageEnd(.suppressed, error: "withheld by the delivery policy: " + reasons)
        }
        if records.allSatisfy({ $0.kind == .expired }) {
            return MessageEnd(.expired, error: "TTL ran out before the provider accepted the push")
        }
        let reasons = records.map { "\($0.deviceToken.prefix(8))…: \($0.reason ?? $0.kind.rawValue)" }.joined(separator: "; ")
        return MessageEnd(.failed, error: reasons)
    }

    /// What follows a recorded hand-off: DISPLAYED when the app reported it
    /// displayed meanwhile, else the fallback alert at window end.
    public func afterHandoff(of message: DeliveryFacts, displayed: Bool) -> HandoffFollowUp {
        displayed ? .displayed : .fallback(at: message.windowEnd)
    }

    /// What the app's DISPLAYED report does to a message in `state`: a
    /// handed-off message ends DISPLAYED and its fallback is dropped; a sent
    /// one ends DISPLAYED; nil for any other state (it stays as it is).
    public func displayed(in state: MessageState) -> (to: MessageState, dropsFallback: Bool)? {
        switch state {
        case .handedOff: (.displayed, true)
        case .sent: (.displayed, false)
        default: nil
        }
    }

    // MARK: Revoke

    /// How a cancelled handed-off message's revoke pushes go out: retried
    /// until the window end (at least ``minimumRetryMilliseconds``),
    /// expiring at the window end.
    public func revoke(windowEnd: Int64, now: Int64) -> RevokePlan {
        RevokePlan(deadline: max(windowEnd, now + Self.minimumRetryMilliseconds), expiresAt: windowEnd)
    }

    /// A revoke push's record from the send's own (`kind`, `reason`):
    /// accepted is `revoked`; anything else is `revoke_failed` with the
    /// failure's kind in front of its reason (a revoke's failure must not
    /// read as the message's delivery outcome).
    public func revokeRecord(kind: DeviceOutcomeKind, reason: String?, accepted: Bool) -> (kind: DeviceOutcomeKind, reason: String?) {
        if accepted { return (.revoked, reason) }
        return (.revokeFailed, kind.rawValue + (reason.map { ": \($0)" } ?? ""))
    }
}
