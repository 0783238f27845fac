import HeraldCore
import HeraldPrimitives
import HeraldProtos
import HeraldStorage

/// A message's timeline for GetMessage: its milestones (first time each was
/// reached), the delivery policy's holds and suppressions (SPEC §4b: one
/// DEFERRED entry per hold — the WAITING outcomes recorded together — and
/// one SUPPRESSED entry per set of devices withheld together) and how it
/// ended, in time order.
enum MessageTimeline {
    enum Event: Sendable, Equatable {
        case scheduled, handedOff, sent, displayed, opened, cancelled, superseded, failed, expired, noDevices, deferred, suppressed

        var wire: Herald__V1__TimelineEvent {
            switch self {
            case .scheduled: HERALD__V1__TIMELINE_EVENT__TIMELINE_EVENT_SCHEDULED
            case .handedOff: HERALD__V1__TIMELINE_EVENT__TIMELINE_EVENT_HANDED_OFF
            case .sent: HERALD__V1__TIMELINE_EVENT__TIMELINE_EVENT_SENT
            case .displayed: HERALD__V1__TIMELINE_EVENT__TIMELINE_EVENT_DISPLAYED
            case .opened: HERALD__V1__TIMELINE_EVENT__TIMELINE_EVENT_OPENED
            case .cancelled: HERALD__V1__TIMELINE_EVENT__TIMELINE_EVENT_CANCELLED
            case .superseded: HERALD__V1__TIMELINE_EVENT__TIMELINE_EVENT_SUPERSEDED
            case .failed: HERALD__V1__TIMELINE_EVENT__TIMELINE_EVENT_FAILED
            case .expired: HERALD__V1__TIMELINE_EVENT__TIMELINE_EVENT_EXPIRED
            case .noDevices: HERALD__V1__TIMELINE_EVENT__TIMELINE_EVENT_NO_DEVICES
            case .deferred: HERALD__V1__TIMELINE_EVENT__TIMELINE_EVENT_DEFERRED
            case .suppressed: HERALD__V1__TIMELINE_EVENT__TIMELINE_EVENT_SUPPRESSED
            }
        }
    }

    struct Entry: Sendable, Equatable {
        var event: Event
        var at: Int64
        var reason: String?
    }

    static func entries(_ detail: MessageDetail) -> [Entry] {
        let message = detail.message
        let steps = detail.milestones
        var entries = [Entry(event: .scheduled, at: message.createdAt)]
        if let at = steps.handedOffAt { entries.append(Entry(event: .handedOff, at: at)) }
        if let at = steps.sentAt {
            let fallback = steps.handedOffAt != nil ? "fallback alert: not reported displayed by the window end" : nil
            entries.append(Entry(event: .sent, at: at, reason: fallback))
        }
        if let at = steps.displayedAt { entries.append(Entry(event: .displayed, at: at)) }
        if let at = steps.openedAt { entries.append(Entry(event: .opened, at: at)) }
        entries += policyEntries(detail.outcomes)
        let suppressedDevices = detail.outcomes.contains { $0.kind == .suppressed }
        // A finished message's last change is how it ended.
        let end: (Event, String?)? = switch message.state {
        case .cancelled: (.cancelled, "cancelled by the caller")
        case .superseded: (.superseded, detail.supersededBy.map { "replaced by message \($0) with the same idempotency_key" }
            ?? "replaced by a later request with the same idempotency_key")
        case .failed: (.failed, message.lastError)
        case .expired: (.expired, message.lastError)
        case .noDevices: (.noDevices, message.lastError)
        // The devices' SUPPRESSED entries above say it, unless none is loaded.
        case .suppressed: suppressedDevices ? nil : (.suppressed, message.lastError)
        case .scheduled, .handedOff, .sent, .displayed: nil
        }
        if let (event, reason) = end { entries.append(Entry(event: event, at: message.updatedAt, reason: reason)) }
        // Stable: equal times keep the life-cycle order above.
        return entries.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
    }

    /// One DEFERRED entry per hold (the WAITING outcomes recorded at one
    /// time), its reason each rule with its earliest planned time, e.g.
    /// "quiet_hours until 2026-11-28T07:00:00Z"; one SUPPRESSED entry per
    /// time devices were withheld, its reason the rules.
    static func policyEntries(_ outcomes: [DeviceOutcome]) -> [Entry] {
        var entries: [Entry] = []
        for kind in [DeviceOutcomeKind.waiting, .suppressed] {
            // (time, reason) → earliest not_before, in the order first recorded.
            var order: [Int64] = []
            var groups: [Int64: [(reason: String, notBefore: Int64?)]] = [:]
            for outcome in outcomes where outcome.kind == kind {
                if groups[outcome.at] == nil { order.append(outcome.at) }
                let reason = outcome.reason ?? kind.rawValue
                if let index = groups[outcome.at, default: []].firstIndex(where: { $0.reason == reason }) {
                    if let notBefore = outcome.notBefore {
                        groups[outcome.at]![index].notBefore = min(groups[outcome.at]![index].notBefore ?? notBefore, notBefore)
                    }
                } else {
                    groups[outcome.at, default: []].append((reason, outcome.notBefore))
                }
            }
            for at in order {
                let text = (groups[at] ?? []).map { group in
                    group.notBefore.map { "\(group.reason) until \(RFC3339.format(Timestamp(milliseconds: $0)))" } ?? group.reason
                }.joined(separator: "; ")
                entries.append(Entry(event: kind == .waiting ? .deferred : .suppressed, at: at, reason: text))
            }
        }
        return entries
    }
}
