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

/// Decides when a message's pushes are due.
public enum DeliveryPlanner {
    /// The default cancellation grace: 30 seconds.
    public static let defaultGraceSeconds: Int64 = 30

    /// Plans delivery.
    ///
    /// - Traditional: one alert due at max(window.start, now + grace).
    /// - Context-aware: the background handoff is due at max(window.start,
    ///   now + grace) too — the grace is the cancellation window, and a
    ///   cancelled handoff would need a revoke, so we never hand off sooner;
    ///   the alert fallback is due at window.end. If the handoff cannot be
    ///   sent before the window ends (start + grace ≥ end) the handoff is
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
}
