public import HeraldPrimitives

/// When a message may be delivered: `[start, end]`.
///
/// `start` = deliver_after or now; `end` = target_delivery_time or start +
/// deliver_within_hours.
public struct DeliveryWindow: Sendable, Hashable {
    /// The window start: deliver_after or now.
    public var start: Timestamp
    /// The window end: target_delivery_time or start + hours.
    public var end: Timestamp

    /// Creates a window.
    public init(start: Timestamp, end: Timestamp) {
        self.start = start
        self.end = end
    }

    /// The longest window or look-ahead accepted: 168 hours.
    public static let maximumHours: UInt32 = 168
}

/// What to do first for a message, and when.
public struct DeliveryPlan: Sendable, Hashable {
    /// The first push: alert (traditional) or background handoff (context-aware).
    public var firstPush: APNsPushType
    /// When the first push is due (`ScheduleResponse.send_at`).
    public var sendAt: Timestamp
    /// Context-aware only: when the alert fallback is due unless displayed.
    public var fallbackAt: Timestamp?

    /// Creates a plan.
    public init(firstPush: APNsPushType, sendAt: Timestamp, fallbackAt: Timestamp?) {
        self.firstPush = firstPush
        self.sendAt = sendAt
        self.fallbackAt = fallbackAt
    }
}

/// The schedule-time half of ``DeliveryPolicy`` under its former name
/// (`DeliveryPlanner.plan`, `DeliveryPlanner.defaultGraceSeconds`).
public typealias DeliveryPlanner = DeliveryPolicy
