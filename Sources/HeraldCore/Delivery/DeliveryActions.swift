/// Which push a message's next send is; the dispatcher renders and sends it.
public enum DeliveryPush: String, Sendable, Hashable {
    /// The alert push: traditional delivery, or the context-aware fallback
    /// at window end.
    case alert
    /// The context-aware hand-off: a background push carrying the content
    /// and the window end.
    case handoff

    /// A device's outcome when the provider accepted this push.
    public var delivered: DeviceOutcomeKind { self == .alert ? .sent : .handedOff }
}

/// Why a push is held (SPEC §4b names them; the `reason` of a WAITING
/// device): its local send time, quiet hours, the frequency caps
/// (``DeliveryPolicy/verdict(rules:zone:push:caps:now:)`` and the ledger),
/// the throttle (the due index paces the bundle's lane).
public enum HoldReason: String, Sendable, Hashable, CaseIterable {
    case quietHours = "quiet_hours"
    case localSendTime = "local_time"
    case frequencyCap = "frequency_cap"
    case throttle
}

/// How a push (or a message with no push to send) ends: the message's
/// next state and its `last_error`.
public struct MessageEnd: Sendable, Hashable {
    /// The state the message moves to.
    public var state: MessageState
    /// Kept as the message's `last_error` (nil on success).
    public var error: String?
    /// The message's next due time (a hand-off's fallback at window end).
    public var dueAt: Int64?

    /// Creates an end.
    public init(_ state: MessageState, error: String? = nil, dueAt: Int64? = nil) {
        self.state = state
        self.error = error
        self.dueAt = dueAt
    }
}

/// What to do with one device for the push under way.
public enum DeviceAction: Sendable, Hashable {
    /// Send the push to it now.
    case send
    /// It already has an outcome for this push (a resumed push): never resent.
    case skip
    /// Hold it until `until` (milliseconds since the epoch).
    case `defer`(until: Int64, reason: HoldReason)
    /// Send nothing; record this outcome for it.
    case finish(DeviceOutcomeKind, reason: String)
}

/// The message-level answer of ``DeliveryPolicy/decide(_:request:history:now:)``.
public enum DeliveryDecision: Sendable {
    /// Send the plan's push to the devices ``DeliveryPolicy/action(for:in:)`` names.
    case send(PushPlan)
    /// Hold the whole message until `until`, unsent.
    case `defer`(until: Int64, reason: HoldReason)
    /// Send nothing: the push ends from the devices' outcomes for it so far
    /// (``DeliveryPolicy/end(of:records:otherwise:)``), or `otherwise` when
    /// there are none.
    case finish(push: DeliveryPush, otherwise: MessageEnd)
}

/// A push to send now: what every device's send of it shares.
public struct PushPlan: Sendable {
    /// The push.
    public var push: DeliveryPush
    /// Retries stop here (milliseconds since the epoch).
    public var deadline: Int64
    /// TTL 0: one attempt, no retries.
    public var singleAttempt: Bool
    /// False when the message's platform override says `"enabled": false`.
    public var platformEnabled: Bool
    /// The devices with an outcome for this push already (a resumed push).
    public var finished: Set<String>

    /// Creates a plan.
    public init(push: DeliveryPush, deadline: Int64, singleAttempt: Bool, platformEnabled: Bool = true, finished: Set<String> = []) {
        self.push = push
        self.deadline = deadline
        self.singleAttempt = singleAttempt
        self.platformEnabled = platformEnabled
        self.finished = finished
    }
}

/// What follows a recorded hand-off.
public enum HandoffFollowUp: Sendable, Hashable {
    /// The app reported it displayed meanwhile: the message ends DISPLAYED.
    case displayed
    /// The alert fallback is due then, unless the app reports it displayed.
    case fallback(at: Int64)
}

/// How a revoke push (a cancelled handed-off message) is sent.
public struct RevokePlan: Sendable, Hashable {
    /// Retries stop here (milliseconds since the epoch).
    public var deadline: Int64
    /// The revoke's own expiry: the hand-off's content expires at the window end.
    public var expiresAt: Int64

    /// Creates a revoke plan. (How often a provider retries a revoke inside
    /// the deadline is its adapter's: FCM sends one data-only attempt.)
    public init(deadline: Int64, expiresAt: Int64) {
        self.deadline = deadline
        self.expiresAt = expiresAt
    }
}
