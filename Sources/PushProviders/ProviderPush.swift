public import HeraldCore
public import HeraldPrimitives

/// One push as every device's send of it shares it: what to render and how
/// long the provider may keep trying.
public struct ProviderPush: Sendable {
    /// Which push of a message this is.
    public enum Kind: String, Sendable {
        /// The visible notification (traditional, or the context-aware fallback).
        case alert
        /// The context-aware background hand-off at window start.
        case handoff
        /// The background revoke of a cancelled handed-off message.
        case revoke
    }

    public var kind: Kind
    /// The message to render (alert, hand-off); nil for a revoke.
    public var message: PushMessage?
    public var bundleID: String
    /// The message's idempotency key (a revoke names it).
    public var idempotencyKey: String?
    /// When the push is being sent.
    public var sendTime: Timestamp
    /// The end of the message's delivery window.
    public var windowEnd: Timestamp
    /// Retries run until then.
    public var deadline: Timestamp
    /// One attempt only (TTL 0).
    public var singleAttempt: Bool
    /// The dispatcher's clock, in milliseconds since the epoch (the
    /// timestamp rule for dropped devices).
    public var now: @Sendable () -> Int64
    /// A hand-off's quiet periods inside its window for a device's time
    /// zone (SPEC §4b: the app's SDK never displays inside them); nil: none.
    public var quiet: (@Sendable (_ timezone: String) -> [QuietSpan])?

    public init(
        kind: Kind, message: PushMessage?, bundleID: String, idempotencyKey: String?, sendTime: Timestamp, windowEnd: Timestamp,
        deadline: Timestamp, singleAttempt: Bool, now: @escaping @Sendable () -> Int64
    ) {
        self.kind = kind
        self.message = message
        self.bundleID = bundleID
        self.idempotencyKey = idempotencyKey
        self.sendTime = sendTime
        self.windowEnd = windowEnd
        self.deadline = deadline
        self.singleAttempt = singleAttempt
        self.now = now
    }
}
