import HeraldCore
public import HeraldStorage
import HeraldPrimitives

// The delivery event log in memory: the appends SQLite's schema v12
// triggers make, in the same order, into an array (cursor = (index + 1, 0),
// counted from the first event ever appended, so trimming keeps cursors).

extension InMemoryStore: DeliveryEventLog, EventLogPruning {
    /// Appends a message-level event.
    func appendEvent(_ kind: EventKind, of message: StoredMessage, at: Int64) {
        appendEvent(DeliveryEvent(
            cursor: EventCursor(major: 0), at: at, kind: kind, bundleID: message.bundleID, messageID: message.id,
            idempotencyKey: message.idempotencyKey, userID: message.userID, campaignID: message.campaignID,
            platform: message.platform))
    }

    func appendEvent(_ event: DeliveryEvent) {
        var event = event
        event.cursor = EventCursor(major: Int64(eventsTrimmed + eventLog.count + 1))
        eventLog.append(event)
    }

    /// `put`'s events: a new message's state, a changed state.
    func appendStateEvent(old: StoredMessage?, new: StoredMessage) {
        guard let old else {
            appendEvent(EventKind(rawValue: new.state.rawValue) ?? .scheduled, of: new, at: new.createdAt)
            return
        }
        guard old.state != new.state, let kind = EventKind(rawValue: new.state.rawValue) else { return }
        appendEvent(kind, of: new, at: new.updatedAt)
    }

    /// Records an outcome and its device-level event (SQLite: a repeated
    /// DISPLAYED or OPENED report for (message, device) is not recorded;
    /// the first OPENED report of a message is a message-level `opened`).
    func record(_ outcome: DeviceOutcome) {
        let previous = outcomeLog[outcome.messageID] ?? []
        let isReport = outcome.kind == .displayed || outcome.kind == .opened
        if isReport && previous.contains(where: { $0.kind == outcome.kind && $0.deviceToken == outcome.deviceToken }) {
            return
        }
        outcomeLog[outcome.messageID, default: []].append(outcome)
        guard let message = messages[outcome.messageID] else { return }
        appendEvent(DeliveryEvent(
            cursor: EventCursor(major: 0), at: outcome.at, kind: Self.eventKind(of: outcome.kind),
            bundleID: message.bundleID, messageID: message.id, idempotencyKey: message.idempotencyKey,
            userID: message.userID, campaignID: message.campaignID, platform: message.platform,
            deviceToken: outcome.deviceToken, reason: Self.eventReason(of: outcome), httpStatus: outcome.httpStatus))
        if outcome.kind == .opened && !previous.contains(where: { $0.kind == .opened }) {
            appendEvent(.opened, of: message, at: outcome.at)
        }
    }

    /// `EventRows.outcomeKind`.
    static func eventKind(of kind: DeviceOutcomeKind) -> EventKind {
        switch kind {
        case .sent: .sent
        case .handedOff: .handedOff
        case .unconfirmed: .unconfirmed
        case .displayed: .displayed
        case .opened: .opened
        case .waiting: .deferred
        case .suppressed: .suppressed
        case .revoked: .revoked
        case .expired: .expired
        default: .failed
        }
    }

    /// `EventRows.outcomeReason`.
    static func eventReason(of outcome: DeviceOutcome) -> String? {
        switch outcome.kind {
        case .revokeFailed: "revoke_failed: " + (outcome.reason ?? "")
        case .unregistered, .badDeviceToken: outcome.reason ?? outcome.kind.rawValue
        default: outcome.reason
        }
    }

    public func events(bundleID: String, after cursor: EventCursor?, filter: EventFilter, limit: Int) async throws -> EventPage {
        try checkOpen()
        guard limit > 0 else { return EventPage(events: [], reached: nil) }
        let limit = min(limit, 10_000)
        var scan = filter.campaignID == nil && filter.kinds.isEmpty ? limit : limit * EventRows.scanFactor
        let start = max(0, Int(cursor?.major ?? 0) - eventsTrimmed)
        var events: [DeliveryEvent] = []
        var reached: EventCursor?
        for event in eventLog[min(start, eventLog.count)...] where event.bundleID == bundleID {
            reached = event.cursor
            if filter.matches(event) {
                events.append(event)
                if events.count == limit { break }
            }
            scan -= 1
            if scan == 0 { break }
        }
        return EventPage(events: events, reached: reached)
    }

    public func latestEventCursor(bundleID: String) async throws -> EventCursor? {
        try checkOpen()
        return eventLog.last { $0.bundleID == bundleID }?.cursor
    }

    public func prunedEventCursor(bundleID: String) async throws -> EventCursor? {
        try checkOpen()
        return eventHorizon[bundleID]
    }

    public func pruneEvents(before cutoff: Int64, limit: Int) async throws -> Int {
        try checkOpen()
        // Never the newest event, as SQLite (its rowid is never reused).
        let candidates = eventLog.dropLast().prefix(max(1, limit)).prefix { $0.at < cutoff }
        for event in candidates { eventHorizon[event.bundleID] = event.cursor }
        eventLog.removeFirst(candidates.count)
        eventsTrimmed += candidates.count
        return candidates.count
    }

    /// `removeDevice`'s event (SQLite's `appendDeviceRemoved`).
    func appendDeviceRemoved(_ device: Device, at timestamp: Int64) {
        appendEvent(DeliveryEvent(
            cursor: EventCursor(major: 0), at: min(timestamp, Timestamp.nowMilliseconds()), kind: .deviceRemoved,
            bundleID: device.bundleID, messageID: "", idempotencyKey: nil, userID: device.userID, campaignID: "",
            platform: device.platform, deviceToken: device.deviceToken))
    }
}
