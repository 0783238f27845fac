public import TimeZones

/// One device's alert push as the policy rules see it (a traditional send
/// or a context-aware fallback; a hand-off is never held). Instants are
/// milliseconds since the epoch.
public struct PolicyPush: Sendable, Hashable {
    /// Exempt from quiet hours and caps (not from `localSendTime`: the
    /// caller asked for that time).
    public var transactional: Bool
    /// The request's `local_send_time`, in the device's zone; nil: none.
    public var localSendTime: TimeOfDay?
    /// When the claimed push was due; the verdict never answers earlier.
    public var dueAt: Int64
    /// Where the local send time is looked for from: window start + grace
    /// at Schedule (SPEC §4b: "not before window start + grace"). It must
    /// not move when the message is held, so that each device's local
    /// instant stays the same across claims.
    public var earliest: Int64
    /// The delivery window.
    public var windowStart: Int64, windowEnd: Int64
    /// The TTL's end; nil: no TTL bound beyond the window.
    public var expiresAt: Int64?
    /// A context-aware fallback (due at window end: any hold suppresses it;
    /// its local send time does not apply, the window end is its time).
    public var isFallback: Bool

    /// Creates a push; `earliest` defaults to `windowStart`.
    public init(
        transactional: Bool = false, localSendTime: TimeOfDay? = nil, dueAt: Int64, earliest: Int64? = nil,
        windowStart: Int64, windowEnd: Int64, expiresAt: Int64? = nil, isFallback: Bool = false
    ) {
        self.transactional = transactional
        self.localSendTime = localSendTime
        self.dueAt = dueAt
        self.earliest = earliest ?? windowStart
        self.windowStart = windowStart
        self.windowEnd = windowEnd
        self.expiresAt = expiresAt
        self.isFallback = isFallback
    }
}

/// The user's counted sends the caps read (milliseconds since the epoch,
/// ascending): of the user in this bundle, and of the user and this
/// campaign. Only the last ``PolicyRules/longestCapPeriodMilliseconds``
/// matter.
public struct CapHistory: Sendable, Hashable {
    /// Counted sends of the user in the bundle (for `cap=`).
    public var user: [Int64]
    /// Counted sends of the user and the campaign (for `campaign-cap=`).
    public var campaign: [Int64]

    /// No counted send.
    public static let none = CapHistory(user: [], campaign: [])

    /// Creates a history; both must be ascending.
    public init(user: [Int64], campaign: [Int64]) {
        self.user = user
        self.campaign = campaign
    }
}

/// The rules' answer for one device's alert push.
public enum PolicyVerdict: Sendable, Hashable {
    /// Send it now.
    case send
    /// Hold it until `until` (then decide again): WAITING with `reason`.
    case hold(until: Int64, reason: HoldReason)
    /// Withhold it for good: SUPPRESSED with the rule's reason.
    case suppress(SuppressReason)
}
