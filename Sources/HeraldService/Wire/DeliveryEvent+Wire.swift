import HeraldCore
import HeraldProtos
import HeraldStorage

extension EventKind {
    var wire: Herald__V1__EventKind {
        switch self {
        case .scheduled: HERALD__V1__EVENT_KIND__EVENT_KIND_SCHEDULED
        case .superseded: HERALD__V1__EVENT_KIND__EVENT_KIND_SUPERSEDED
        case .cancelled: HERALD__V1__EVENT_KIND__EVENT_KIND_CANCELLED
        case .handedOff: HERALD__V1__EVENT_KIND__EVENT_KIND_HANDED_OFF
        case .sent: HERALD__V1__EVENT_KIND__EVENT_KIND_SENT
        case .displayed: HERALD__V1__EVENT_KIND__EVENT_KIND_DISPLAYED
        case .opened: HERALD__V1__EVENT_KIND__EVENT_KIND_OPENED
        case .failed: HERALD__V1__EVENT_KIND__EVENT_KIND_FAILED
        case .expired: HERALD__V1__EVENT_KIND__EVENT_KIND_EXPIRED
        case .noDevices: HERALD__V1__EVENT_KIND__EVENT_KIND_NO_DEVICES
        case .deferred: HERALD__V1__EVENT_KIND__EVENT_KIND_DEFERRED
        case .suppressed: HERALD__V1__EVENT_KIND__EVENT_KIND_SUPPRESSED
        case .unconfirmed: HERALD__V1__EVENT_KIND__EVENT_KIND_UNCONFIRMED
        case .deviceRemoved: HERALD__V1__EVENT_KIND__EVENT_KIND_DEVICE_REMOVED
        case .revoked: HERALD__V1__EVENT_KIND__EVENT_KIND_REVOKED
        }
    }

    /// The kind of a wire value; nil for UNSPECIFIED and unknown numbers.
    init?(wire: Herald__V1__EventKind) {
        guard let kind = EventKind.allCases.first(where: { $0.wire == wire }) else { return nil }
        self = kind
    }
}

/// StreamEvents' cursor text: `e1.<major>.<minor>` (decimal). Opaque to
/// callers; strict here: anything else is INVALID_ARGUMENT.
enum EventCursorText {
    static func format(_ cursor: EventCursor) -> String { "e1.\(cursor.major).\(cursor.minor)" }

    /// The cursor, or nil when `text` is not one this build wrote.
    static func parse(_ text: String) -> EventCursor? {
        guard text.utf8.count <= 64 else { return nil }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "e1",
              parts[1].allSatisfy(\.isASCIIDigit), parts[2].allSatisfy(\.isASCIIDigit),
              let major = Int64(parts[1]), let minor = Int64(parts[2]) else { return nil }
        return EventCursor(major: major, minor: minor)
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}

extension DeliveryEvent {
    /// The packed `herald.v1.DeliveryEvent`.
    func packed() -> [UInt8] {
        let arena = CArena()
        var wire = Herald__V1__DeliveryEvent.initialized()
        wire.cursor = arena.string(EventCursorText.format(cursor))
        wire.at = ReadSideWire.time(at, arena)
        wire.kind = kind.wire
        wire.message_id = arena.string(messageID)
        wire.idempotency_key = arena.string(idempotencyKey ?? "")
        wire.user_id = arena.string(userID)
        wire.campaign_id = arena.string(campaignID)
        wire.platform = platform.wire
        wire.device_token = arena.string(deviceToken ?? "")
        wire.reason = arena.string(reason ?? "")
        wire.http_status = UInt32(clamping: httpStatus ?? 0)
        return withExtendedLifetime(arena) { ProtobufC.pack(&wire) }
    }
}
