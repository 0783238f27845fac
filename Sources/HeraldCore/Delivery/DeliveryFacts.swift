/// What the delivery policy reads of a claimed message.
public struct DeliveryFacts: Sendable, Hashable {
    /// The state it was claimed from: SCHEDULED or HANDED_OFF.
    public var state: MessageState
    /// Its delivery method.
    public var method: DeliveryMethod
    /// Its platform.
    public var platform: Platform
    /// Its window end (milliseconds since the epoch).
    public var windowEnd: Int64
    /// When the push is due (milliseconds since the epoch).
    public var dueAt: Int64

    /// Creates the facts.
    public init(state: MessageState, method: DeliveryMethod, platform: Platform, windowEnd: Int64, dueAt: Int64) {
        self.state = state
        self.method = method
        self.platform = platform
        self.windowEnd = windowEnd
        self.dueAt = dueAt
    }
}

/// A device as the delivery policy sees it (the store's `Device` conforms).
public protocol DeliveryDevice {
    /// The token; a push's outcomes are keyed by it.
    var deviceToken: String { get }
    /// The device's platform.
    var platform: Platform { get }
}

/// One device's recorded outcome, as the delivery policy reads it (the
/// store's `DeviceOutcome` conforms).
public protocol DeliveryRecord {
    /// The device.
    var deviceToken: String { get }
    /// What happened.
    var kind: DeviceOutcomeKind { get }
    /// The provider's or a local reason.
    var reason: String? { get }
    /// When it was recorded (milliseconds since the epoch).
    var at: Int64 { get }
}
