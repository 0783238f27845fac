public import HeraldPrimitives

/// Schedule's own fields: required strings, their bounds, the delivery window.
extension Validator {
    static func checkRequired(_ s: String, _ field: String, max: Int, into v: inout [FieldViolation]) {
        if s.isEmpty {
            v.append(.init(field: field, reason: "required"))
        } else {
            checkMax(s, field, max: max, into: &v)
        }
    }

    static func checkMax(_ s: String, _ field: String, max: Int, into v: inout [FieldViolation]) {
        let n = s.utf8.count
        if n > max { v.append(.init(field: field, reason: "must be at most \(max) bytes, got \(n)")) }
    }

    /// Resolves the delivery window (SPEC §4): start = deliver_after or now;
    /// end = target_delivery_time or start + deliver_within_hours.
    ///
    /// Rules: exactly one of deliver_within_hours (1…168) and
    /// target_delivery_time (after now, at most 168 h after now);
    /// deliver_after at most 168 h after now, and before the window end.
    /// A deliver_after in the past is accepted (the window simply started).
    public static func resolveWindow(_ input: ScheduleInput, now: Timestamp, into v: inout [FieldViolation]) -> DeliveryWindow? {
        let maxAhead = Int64(DeliveryWindow.maximumHours) * 3600
        let horizon = now.adding(seconds: maxAhead)
        var start: Timestamp? = now
        if let after = nonEmpty(input.deliverAfter) {
            do {
                let t = try RFC3339.parse(after)
                if t > horizon {
                    v.append(.init(field: "deliver_after", reason: "must be at most \(DeliveryWindow.maximumHours) h from now (\(RFC3339.format(horizon))), got \(RFC3339.format(t))"))
                    start = nil
                } else {
                    start = t
                }
            } catch {
                v.append(.init(field: "deliver_after", reason: "not an RFC 3339 timestamp: \(error.reason)"))
                start = nil
            }
        }
        let target = nonEmpty(input.targetDeliveryTime)
        switch (input.deliverWithinHours, target) {
        case (nil, nil):
            v.append(.init(field: "deliver_within_hours", reason: "one of deliver_within_hours and target_delivery_time is required"))
            return nil
        case (.some, .some):
            v.append(.init(field: "target_delivery_time", reason: "give either deliver_within_hours or target_delivery_time, not both"))
            return nil
        case (let h?, nil):
            guard h >= 1 && h <= DeliveryWindow.maximumHours else {
                v.append(.init(field: "deliver_within_hours", reason: "must be 1 to \(DeliveryWindow.maximumHours), got \(h)"))
                return nil
            }
            guard let start else { return nil }
            return DeliveryWindow(start: start, end: start.adding(seconds: Int64(h) * 3600))
        case (nil, let text?):
            let end: Timestamp
            do {
                end = try RFC3339.parse(text)
            } catch {
                v.append(.init(field: "target_delivery_time", reason: "not an RFC 3339 timestamp: \(error.reason)"))
                return nil
            }
            if end <= now {
                v.append(.init(field: "target_delivery_time", reason: "must be in the future, got \(RFC3339.format(end)) (now \(RFC3339.format(now)))"))
                return nil
            }
            if end > horizon {
                v.append(.init(field: "target_delivery_time", reason: "must be at most \(DeliveryWindow.maximumHours) h from now (\(RFC3339.format(horizon))), got \(RFC3339.format(end))"))
                return nil
            }
            guard let start else { return nil }
            if start >= end {
                v.append(.init(field: "deliver_after", reason: "must be before target_delivery_time (\(RFC3339.format(end))), got \(RFC3339.format(start))"))
                return nil
            }
            return DeliveryWindow(start: start, end: end)
        }
    }
}
