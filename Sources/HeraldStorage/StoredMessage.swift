public import HeraldCore

/// An accepted message as stored. Times are milliseconds since the UNIX epoch.
public struct StoredMessage: Sendable, Hashable {
    /// Server-assigned UUID string.
    public var id: String
    public var bundleID: String
    public var platform: Platform
    public var userID: String
    public var campaignID: String
    /// The idempotency key (scoped per bundle ID); nil when none. The service
    /// generates one when the request has none, so in practice always set.
    public var idempotencyKey: String?
    public var deliveryMethod: DeliveryMethod
    /// True when the delivery method was assigned by the A/B split.
    public var abTest: Bool
    public var windowStart: Int64
    public var windowEnd: Int64
    /// The next action time: send (traditional), handoff, or fallback alert.
    public var dueAt: Int64
    public var state: MessageState
    /// The accepted request's protobuf bytes: everything needed to render later.
    public var request: [UInt8]
    public var createdAt: Int64
    public var updatedAt: Int64
    /// How many times a push for this message was claimed for sending.
    public var attempts: Int
    public var lastError: String?
    /// The provider's id of the sent push (the apns-id, the FCM message name).
    public var providerMessageID: String?
    /// Set while a push for this message is in flight (claimed by
    /// `claim(id:from:now:)`, not yet finished by `transition`).
    public var sendingSince: Int64?
    /// When the first push for this message was claimed; once set, the
    /// idempotency key is spent (a new Schedule with it is ALREADY_EXISTS).
    public var sendStartedAt: Int64?
    /// When the push now under way was first claimed. It survives a crash
    /// (and a deferral) so the resumed push skips the devices already done
    /// for it; `transition` clears it when the push ends.
    public var pushStartedAt: Int64?
    /// Schedule's `transactional` (SPEC §4b): the message skips quiet hours
    /// and caps, and goes before its bundle's other due messages (the due
    /// index's urgent slot; PostgreSQL's claim order).
    public var transactional: Bool

    public init(
        id: String, bundleID: String, platform: Platform, userID: String, campaignID: String,
        idempotencyKey: String?, deliveryMethod: DeliveryMethod, abTest: Bool,
        windowStart: Int64, windowEnd: Int64, dueAt: Int64, state: MessageState = .scheduled,
        request: [UInt8], createdAt: Int64, updatedAt: Int64? = nil, attempts: Int = 0,
        lastError: String? = nil, providerMessageID: String? = nil,
        sendingSince: Int64? = nil, sendStartedAt: Int64? = nil, pushStartedAt: Int64? = nil,
        transactional: Bool = false
    ) {
        self.id = id
        self.bundleID = bundleID
        self.platform = platform
        self.userID = userID
        self.campaignID = campaignID
        self.idempotencyKey = idempotencyKey
        self.deliveryMethod = deliveryMethod
        self.abTest = abTest
        self.windowStart = windowStart
        self.windowEnd = windowEnd
        self.dueAt = dueAt
        self.state = state
        self.request = request
        self.createdAt = createdAt
        self.updatedAt = updatedAt ?? createdAt
        self.attempts = attempts
        self.lastError = lastError
        self.providerMessageID = providerMessageID
        self.sendingSince = sendingSince
        self.sendStartedAt = sendStartedAt
        self.pushStartedAt = pushStartedAt
        self.transactional = transactional
    }

    /// True while a push is in flight: the message is "being sent".
    public var isSending: Bool { sendingSince != nil }

    /// True once any push for this message may have reached APNs: the key is
    /// spent and must never cause another delivery.
    public var keySpent: Bool {
        if sendStartedAt != nil { return true }
        switch state {
        case .handedOff, .sent, .displayed: return true
        default: return false
        }
    }
}

/// What `schedule` did.
public enum ScheduleOutcome: Sendable, Hashable {
    /// The message was stored. `supersededID` names the not-yet-sent message
    /// with the same key that it replaced (now SUPERSEDED; drop it from any
    /// due index); nil when nothing was replaced.
    case scheduled(StoredMessage, supersededID: String?)
    /// The key belongs to a message that was already sent, handed off or is
    /// being sent: nothing was stored (gRPC ALREADY_EXISTS).
    case alreadyExists(StoredMessage)

    /// `replaced` of ScheduleResponse.
    public var replaced: Bool {
        if case .scheduled(_, .some) = self { return true }
        return false
    }
}

/// What `cancel` did.
public enum CancelOutcome: Sendable, Hashable {
    /// No message matches every field (gRPC NOT_FOUND).
    case notFound
    /// The message is CANCELLED (now, or already before: cancelling twice is
    /// fine). `revokeDue` is true when it had been handed off to the device:
    /// a background revoke push is owed (also recorded in `pendingRevokes`).
    case cancelled(StoredMessage, revokeDue: Bool)
    /// The message was already sent, is being sent, or ended otherwise.
    case notCancelled(StoredMessage)

    /// `cancelled` of CancelResponse.
    public var cancelled: Bool {
        if case .cancelled = self { return true }
        return false
    }

    /// `state` of CancelResponse: a message being sent reports SENT.
    public var state: MessageState? {
        switch self {
        case .notFound: return nil
        case .cancelled(let message, _): return message.state
        case .notCancelled(let message): return message.isSending ? .sent : message.state
        }
    }
}

/// A message waiting for an action, as loaded to rebuild the due index.
public struct PendingEntry: Sendable, Hashable {
    public var id: String
    public var dueAt: Int64
    public var state: MessageState
    /// Its bundle (the scheduler's lane: one bundle's backlog never delays
    /// another's due pushes).
    public var bundleID: String
    /// A transactional message: first among its bundle's due ones.
    public var transactional: Bool

    public init(id: String, dueAt: Int64, state: MessageState, bundleID: String = "", transactional: Bool = false) {
        self.id = id
        self.dueAt = dueAt
        self.state = state
        self.bundleID = bundleID
        self.transactional = transactional
    }
}

/// Where to continue a paged `pending` scan (keyset pagination).
public struct PendingCursor: Sendable, Hashable {
    public var dueAt: Int64
    public var id: String

    public init(after entry: PendingEntry) {
        self.dueAt = entry.dueAt
        self.id = entry.id
    }
}

/// A background revoke push owed for a cancelled handed-off message.
public struct PendingRevoke: Sendable, Hashable {
    public var messageID: String
    public var dueAt: Int64

    public init(messageID: String, dueAt: Int64) {
        self.messageID = messageID
        self.dueAt = dueAt
    }
}

/// The result of sending one message to one device (or of an app's report).
public struct DeviceOutcome: Sendable, Hashable {
    public var messageID: String
    public var deviceToken: String
    /// Stored as its raw value in the `status` column.
    public var kind: DeviceOutcomeKind
    /// The provider's id of the push it accepted (the apns-id, the FCM
    /// message name); nil otherwise.
    public var providerMessageID: String?
    /// The provider's reason (e.g. "BadTopic") or a local one.
    public var reason: String?
    public var at: Int64
    /// The provider's HTTP status; nil when it never answered.
    public var httpStatus: Int?
    /// Requests sent for this device's push, retries included; nil when unknown.
    public var attempts: Int?
    /// The device's APNs environment when the push went out.
    public var environment: APNsEnvironment?
    /// ``DeviceOutcomeKind/waiting`` only: when the held push is planned for
    /// (milliseconds since the epoch; SPEC §4b `not_before`); nil otherwise.
    public var notBefore: Int64?

    public init(
        messageID: String, deviceToken: String, kind: DeviceOutcomeKind, providerMessageID: String? = nil, reason: String? = nil,
        at: Int64, httpStatus: Int? = nil, attempts: Int? = nil, environment: APNsEnvironment? = nil, notBefore: Int64? = nil
    ) {
        self.notBefore = notBefore
        self.messageID = messageID
        self.deviceToken = deviceToken
        self.kind = kind
        self.providerMessageID = providerMessageID
        self.reason = reason
        self.at = at
        self.httpStatus = httpStatus
        self.attempts = attempts
        self.environment = environment
    }
}

/// A push being handed to APNs for one device (see `HeraldStore.recordHandOvers`).
public struct HandOverMark: Sendable, Hashable {
    public var messageID: String
    public var deviceToken: String
    /// The claimed message's `pushStartedAt`.
    public var push: Int64
    public var at: Int64

    public init(messageID: String, deviceToken: String, push: Int64, at: Int64) {
        self.messageID = messageID
        self.deviceToken = deviceToken
        self.push = push
        self.at = at
    }
}

/// What `recoverInterrupted` did.
public struct InterruptedRecovery: Sendable, Equatable {
    /// Messages caught mid-push, back to their pre-claim state to resume.
    public var resumed: [String]
    /// Devices marked UNCONFIRMED (handed to APNs, no answer before the crash).
    public var unconfirmedDevices: Int

    public init(resumed: [String], unconfirmedDevices: Int) {
        self.resumed = resumed
        self.unconfirmedDevices = unconfirmedDevices
    }
}

/// The store's health for Status.
public struct StoreHealth: Sendable, Hashable {
    /// "sqlite" for the embedded store.
    public var kind: String
    /// Where the data lives (a file path here).
    public var location: String
    public var ok: Bool
    public var lastError: String?

    public init(kind: String, location: String, ok: Bool, lastError: String?) {
        self.kind = kind
        self.location = location
        self.ok = ok
        self.lastError = lastError
    }
}
