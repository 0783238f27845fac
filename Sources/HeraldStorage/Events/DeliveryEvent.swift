public import HeraldCore

/// What happened, in the delivery event log (SPEC §3 StreamEvents,
/// `EVENT_KIND_*`). Message-level events (no device token) follow the
/// message's state; device-level events (with a token) follow one device's
/// outcome.
public enum EventKind: String, Sendable, Hashable, CaseIterable {
    case scheduled, superseded, cancelled
    case handedOff = "handed_off"
    case sent, displayed, opened, failed, expired
    case noDevices = "no_devices"
    case deferred, suppressed, unconfirmed
    case deviceRemoved = "device_removed"
    case revoked
}

/// A position in one bundle's event log: events are ordered by
/// (`major`, `minor`). SQLite: `major` is the row's sequence number (its
/// single writer commits in sequence order), `minor` 0. PostgreSQL: `major`
/// is the writing transaction's id (`pg_current_xact_id()`), `minor` the
/// sequence number; a reader only returns events of transactions older than
/// every transaction still running (`pg_snapshot_xmin`), so an event that
/// commits later can never sort before a position already returned.
/// Opaque to callers (the service encodes it).
public struct EventCursor: Sendable, Hashable, Comparable {
    public var major: Int64
    public var minor: Int64

    public init(major: Int64, minor: Int64 = 0) {
        self.major = major
        self.minor = minor
    }

    public static func < (a: EventCursor, b: EventCursor) -> Bool { (a.major, a.minor) < (b.major, b.minor) }
}

/// One entry of the delivery event log.
public struct DeliveryEvent: Sendable, Hashable {
    public var cursor: EventCursor
    /// When it happened (ms since the epoch).
    public var at: Int64
    public var kind: EventKind
    public var bundleID: String
    public var messageID: String
    public var idempotencyKey: String?
    public var userID: String
    public var campaignID: String
    public var platform: Platform
    /// Device-level events only.
    public var deviceToken: String?
    /// The provider's reason, or the policy rule (`quiet_hours`, …).
    public var reason: String?
    /// The provider's HTTP status, when it answered one.
    public var httpStatus: Int?

    public init(
        cursor: EventCursor, at: Int64, kind: EventKind, bundleID: String, messageID: String, idempotencyKey: String?,
        userID: String, campaignID: String, platform: Platform, deviceToken: String? = nil, reason: String? = nil,
        httpStatus: Int? = nil
    ) {
        self.cursor = cursor
        self.at = at
        self.kind = kind
        self.bundleID = bundleID
        self.messageID = messageID
        self.idempotencyKey = idempotencyKey
        self.userID = userID
        self.campaignID = campaignID
        self.platform = platform
        self.deviceToken = deviceToken
        self.reason = reason
        self.httpStatus = httpStatus
    }
}

/// StreamEvents' filters: a campaign, and kinds (empty: every kind).
public struct EventFilter: Sendable, Hashable {
    public var campaignID: String?
    public var kinds: Set<EventKind>

    public init(campaignID: String? = nil, kinds: Set<EventKind> = []) {
        self.campaignID = campaignID
        self.kinds = kinds
    }

    public func matches(_ event: DeliveryEvent) -> Bool {
        (campaignID == nil || event.campaignID == campaignID) && (kinds.isEmpty || kinds.contains(event.kind))
    }
}

/// A read of the log: the matching events, and how far the read looked
/// (`reached`: the position to resume after, past events the filter
/// skipped; nil when nothing was examined).
public struct EventPage: Sendable, Hashable {
    public var events: [DeliveryEvent]
    public var reached: EventCursor?

    public init(events: [DeliveryEvent], reached: EventCursor?) {
        self.events = events
        self.reached = reached
    }
}

/// The delivery event log (issue 27, SPEC §3 StreamEvents): every state
/// change of a message and every device outcome, appended once by the
/// store in the same transaction as the change, in one total order per
/// bundle (``EventCursor``), kept for the retention period.
public protocol DeliveryEventLog: Sendable {
    /// At most `limit` events of `bundleID` after `cursor` (nil: from the
    /// oldest kept), in order, matching `filter`; never an event that a
    /// transaction still running could order before one returned. One read
    /// returns at most 10,000 events and, with a filter, examines a bounded
    /// stretch of the log (8× the events asked): fewer than `limit` does not
    /// mean the end; the end is a page with `reached` nil or unchanged. A
    /// `limit` of 0 or less reads nothing (`reached` nil).
    func events(bundleID: String, after cursor: EventCursor?, filter: EventFilter, limit: Int) async throws -> EventPage

    /// The position after the last event of `bundleID` readable now (a
    /// stream with no cursor starts there); nil when the log has none.
    func latestEventCursor(bundleID: String) async throws -> EventCursor?

    /// The position through which retention deleted `bundleID`'s events
    /// (nil: none deleted). A cursor before it is OUT_OF_RANGE: events
    /// after it may be gone.
    func prunedEventCursor(bundleID: String) async throws -> EventCursor?
}
