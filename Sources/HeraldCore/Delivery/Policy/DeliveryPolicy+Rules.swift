public import TimeZones

/// The delivery-policy rules of SPEC §4b (local send time, quiet hours,
/// frequency caps) for one device's alert push: pure, time passed in, the
/// device's zone passed in as loaded ``ZoneRules``. The throttle is not
/// here: the store enforces it across replicas (``PolicyRules/maxPerSecond``).
extension DeliveryPolicy {
    /// The most quiet periods ``quietPeriods(rules:zone:from:to:)`` returns
    /// (a 168-hour window holds at most 8).
    public static let maximumQuietPeriods = 16

    /// The verdict for one device's alert push (a traditional send or a
    /// context-aware fallback; never call it for a hand-off, which is not
    /// held). From t = max(`now`, `push.dueAt`):
    ///
    /// 1. Local send time (not for a fallback, whose time is the window
    ///    end): the device's instant (``localSendInstant(zone:time:windowStart:earliest:windowEnd:)``
    ///    from `push.earliest`); none in the window → suppress `local_time`;
    ///    later than t → t moves there (reason `local_time`). Transactional
    ///    pushes keep it: the caller asked for that time.
    /// 2. Unless transactional, with `rules`: inside quiet hours → t moves
    ///    to the period's end (`quiet_hours`); the caps (per user, per user
    ///    and campaign) not allowing t → t moves to the earliest instant
    ///    they do (`frequency_cap`); repeated until neither moves t (at most
    ///    three rounds: moving later never makes the caps stricter).
    /// 3. Whenever a rule moves t at or past the window end or `expiresAt`,
    ///    the device is suppressed: by `frequency_cap` once the caps have
    ///    moved t (no instant they allow lies inside the window outside
    ///    quiet hours), else by the rule that moved it. A fallback is due at
    ///    the window end, so any hold of it suppresses.
    /// 4. t unmoved → send; else hold until t with the reason of the rule
    ///    that moved it last.
    public func verdict(rules: PolicyRules?, zone: ZoneRules, push: PolicyPush, caps: CapHistory, now: Int64) -> PolicyVerdict {
        var t = max(now, push.dueAt)
        var reason: HoldReason?
        let limit = min(push.windowEnd, push.expiresAt ?? .max)
        if let time = push.localSendTime, !push.isFallback {
            guard let local = localSendInstant(
                zone: zone, time: time, windowStart: push.windowStart, earliest: push.earliest, windowEnd: push.windowEnd)
            else { return .suppress(.localSendTime) }
            if local > t {
                if local >= limit { return .suppress(.localSendTime) }
                t = local
                reason = .localSendTime
            }
        }
        if let rules, !push.transactional, rules.holdsPushes {
            var capsMoved = false
            for _ in 0..<4 {
                var moved = false
                if let quiet = rules.quietHours, let end = zone.endOfQuietPeriod(quiet, containing: t) {
                    if end >= limit { return .suppress(capsMoved ? .frequencyCap : .quietHours) }
                    t = end
                    reason = .quietHours
                    moved = true
                }
                let allowed = max(
                    Self.earliestAllowed(by: rules.caps, sends: caps.user, atOrAfter: t),
                    Self.earliestAllowed(by: rules.campaignCaps, sends: caps.campaign, atOrAfter: t))
                if allowed > t {
                    if allowed >= limit { return .suppress(.frequencyCap) }
                    t = allowed
                    reason = .frequencyCap
                    capsMoved = true
                    moved = true
                }
                if !moved { break }
            }
        }
        guard let reason else { return .send }
        return .hold(until: t, reason: reason)
    }

    /// The earliest instant at or after `t` at which every cap allows one
    /// more send, given the counted `sends` (ascending). A cap N/P allows t'
    /// while fewer than N sends s have t' − P < s; with k ≥ N of them at t,
    /// the (k − N + 1)-th must leave: t' = that send + P. Later instants
    /// only drop sends, so the largest answer over the caps satisfies all.
    /// O(caps × log sends).
    static func earliestAllowed(by caps: [FrequencyCap], sends: [Int64], atOrAfter t: Int64) -> Int64 {
        var earliest = t
        for cap in caps where sends.count >= cap.count {
            // The first send inside the period ending at t (binary search).
            let floor = t - cap.periodMilliseconds
            var low = 0, high = sends.count
            while low < high {
                let mid = (low + high) / 2
                if sends[mid] <= floor { low = mid + 1 } else { high = mid }
            }
            let inside = sends.count - low
            if inside >= cap.count { earliest = max(earliest, sends[low + inside - cap.count] + cap.periodMilliseconds) }
        }
        return earliest
    }

    /// A device's local send instant (SPEC §4b): the first instant at or
    /// after max(`windowStart`, `earliest`) whose local time in `zone` is
    /// `time` (a time in a DST gap: the gap's end; a repeated time: its
    /// first occurrence), if it is before `windowEnd`; nil otherwise (that
    /// device is SUPPRESSED `local_time`). At Schedule, `earliest` is
    /// now + grace, and the message's `send_at` is the earliest of its
    /// devices' instants.
    public func localSendInstant(zone: ZoneRules, time: TimeOfDay, windowStart: Int64, earliest: Int64, windowEnd: Int64) -> Int64? {
        let from = max(windowStart, earliest)
        guard from < windowEnd else { return nil }
        let instant = zone.nextInstant(atOrAfter: from, localTime: time)
        return instant < windowEnd ? instant : nil
    }

    /// The quiet periods of `rules` in `zone` that overlap [`from`, `to`),
    /// clipped to it, in order (at most ``maximumQuietPeriods``): what a
    /// context-aware hand-off tells the app's SDK, which must not display
    /// inside them. Empty without quiet hours. A period whose whole span a
    /// DST gap skips that day does not occur.
    public func quietPeriods(rules: PolicyRules?, zone: ZoneRules, from: Int64, to: Int64) -> [(start: Int64, end: Int64)] {
        guard let quiet = rules?.quietHours, from < to else { return [] }
        var periods: [(start: Int64, end: Int64)] = []
        var t = from
        // Each round either records a period or moves to the next local
        // start time (at most one a day): bounded by the count kept.
        for _ in 0..<(4 * Self.maximumQuietPeriods) where t < to && periods.count < Self.maximumQuietPeriods {
            if let end = zone.endOfQuietPeriod(quiet, containing: t) {
                periods.append((t, min(end, to)))
                t = end
            } else {
                t = zone.nextInstant(atOrAfter: t + 1, localTime: quiet.start)
            }
        }
        return periods
    }
}
