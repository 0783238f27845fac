import HeraldCore
import HeraldPrimitives
import HeraldProtos
import HeraldStorage

extension Platform {
    var wire: Herald__V1__Platform {
        switch self {
        case .ios: HERALD__V1__PLATFORM__PLATFORM_IOS
        case .android: HERALD__V1__PLATFORM__PLATFORM_ANDROID
        }
    }
}

extension APNsEnvironment? {
    var wire: Herald__V1__ApnsEnvironment {
        switch self {
        case .production: HERALD__V1__APNS_ENVIRONMENT__APNS_ENVIRONMENT_PRODUCTION
        case .sandbox: HERALD__V1__APNS_ENVIRONMENT__APNS_ENVIRONMENT_SANDBOX
        case nil: HERALD__V1__APNS_ENVIRONMENT__APNS_ENVIRONMENT_UNSPECIFIED
        }
    }
}

extension DeviceOutcomeKind {
    /// The `herald.v1.DeviceOutcome` wire value; nil for the app's reports
    /// (DISPLAYED, OPENED: timeline entries, not deliveries). A kind a newer
    /// build wrote reads as UNSPECIFIED.
    var deliveryWire: Herald__V1__DeviceOutcome? {
        switch self {
        case .sent: HERALD__V1__DEVICE_OUTCOME__DEVICE_OUTCOME_SENT
        case .handedOff: HERALD__V1__DEVICE_OUTCOME__DEVICE_OUTCOME_HANDED_OFF
        case .unconfirmed: HERALD__V1__DEVICE_OUTCOME__DEVICE_OUTCOME_UNCONFIRMED
        case .revoked: HERALD__V1__DEVICE_OUTCOME__DEVICE_OUTCOME_REVOKED
        case .revokeFailed: HERALD__V1__DEVICE_OUTCOME__DEVICE_OUTCOME_REVOKE_FAILED
        case .unregistered: HERALD__V1__DEVICE_OUTCOME__DEVICE_OUTCOME_UNREGISTERED
        case .badDeviceToken: HERALD__V1__DEVICE_OUTCOME__DEVICE_OUTCOME_BAD_DEVICE_TOKEN
        case .rejected: HERALD__V1__DEVICE_OUTCOME__DEVICE_OUTCOME_REJECTED
        case .expired: HERALD__V1__DEVICE_OUTCOME__DEVICE_OUTCOME_EXPIRED
        case .failed: HERALD__V1__DEVICE_OUTCOME__DEVICE_OUTCOME_FAILED
        case .waiting: HERALD__V1__DEVICE_OUTCOME__DEVICE_OUTCOME_WAITING
        case .suppressed: HERALD__V1__DEVICE_OUTCOME__DEVICE_OUTCOME_SUPPRESSED
        case .displayed, .opened: nil
        default: HERALD__V1__DEVICE_OUTCOME__DEVICE_OUTCOME_UNSPECIFIED
        }
    }
}

/// Builds the read side's response messages in a `CArena`.
enum ReadSideWire {
    static func time(_ milliseconds: Int64, _ arena: CArena) -> UnsafeMutablePointer<CChar> {
        arena.string(RFC3339.format(Timestamp(milliseconds: milliseconds)))
    }

    static func summary(_ m: StoredMessage, _ arena: CArena) -> UnsafeMutablePointer<Herald__V1__MessageSummary> {
        arena.message(Herald__V1__MessageSummary.self) {
            $0.message_id = arena.string(m.id)
            $0.idempotency_key = arena.string(m.idempotencyKey ?? "")
            $0.bundle_id = arena.string(m.bundleID)
            $0.platform = m.platform.wire
            $0.user_id = arena.string(m.userID)
            $0.campaign_id = arena.string(m.campaignID)
            $0.delivery_method = m.deliveryMethod.wire
            $0.ab_test = m.abTest ? 1 : 0
            $0.window_start = time(m.windowStart, arena)
            $0.window_end = time(m.windowEnd, arena)
            $0.send_at = time(m.dueAt, arena)
            // The stored state: a push under way shows as its devices'
            // RETRYING entries, the state changes once the push ends.
            $0.state = m.state.wire
            $0.created_at = time(m.createdAt, arena)
            $0.updated_at = time(m.updatedAt, arena)
            $0.attempts = UInt32(clamping: m.attempts)
            $0.last_error = arena.string(m.lastError ?? "")
        }
    }

    /// The outcomes GetMessage lists, in the order recorded: a WAITING
    /// record is shown only while it is its device's latest (a device held,
    /// then held again or sent, shows only how it stands now); every other
    /// record is shown (a hand-off and its fallback alert are two pushes).
    static func shownOutcomes(_ outcomes: [DeviceOutcome]) -> [DeviceOutcome] {
        guard outcomes.contains(where: { $0.kind == .waiting }) else { return outcomes }
        var latest: [String: Int] = [:]
        for (index, outcome) in outcomes.enumerated() { latest[outcome.deviceToken] = index }
        return outcomes.enumerated().filter { $0.element.kind != .waiting || latest[$0.element.deviceToken] == $0.offset }.map(\.element)
    }

    static func deliveries(_ detail: MessageDetail, _ arena: CArena) -> [UnsafeMutablePointer<Herald__V1__DeviceDelivery>] {
        let platform = detail.message.platform.wire
        var entries = shownOutcomes(detail.outcomes).compactMap { outcome -> UnsafeMutablePointer<Herald__V1__DeviceDelivery>? in
            guard let kind = outcome.kind.deliveryWire else { return nil }
            return arena.message(Herald__V1__DeviceDelivery.self) {
                $0.platform = platform
                $0.environment = outcome.environment.wire
                $0.device_token = arena.string(outcome.deviceToken)
                $0.outcome = kind
                $0.reason = arena.string(outcome.reason ?? "")
                $0.http_status = UInt32(clamping: outcome.httpStatus ?? 0)
                // apns_id: APNs only (SPEC §3); provider_message_id for every provider.
                if detail.message.platform == .ios { $0.apns_id = arena.string(outcome.providerMessageID ?? "") }
                $0.provider_message_id = arena.string(outcome.providerMessageID ?? "")
                $0.attempts = UInt32(clamping: outcome.attempts ?? 0)
                $0.at = time(outcome.at, arena)
                // WAITING only: when the held push is planned for (SPEC §4b).
                if outcome.kind == .waiting, let notBefore = outcome.notBefore { $0.not_before = time(notBefore, arena) }
            }
        }
        for mark in detail.inFlight {
            entries.append(arena.message(Herald__V1__DeviceDelivery.self) {
                $0.platform = platform
                $0.device_token = arena.string(mark.deviceToken)
                $0.outcome = HERALD__V1__DEVICE_OUTCOME__DEVICE_OUTCOME_RETRYING
                $0.reason = arena.string("handed to the provider; no final answer yet")
                $0.at = time(mark.at, arena)
            })
        }
        return entries
    }

    static func timeline(_ detail: MessageDetail, _ arena: CArena) -> [UnsafeMutablePointer<Herald__V1__TimelineEntry>] {
        MessageTimeline.entries(detail).map { entry in
            arena.message(Herald__V1__TimelineEntry.self) {
                $0.event = entry.event.wire
                $0.at = time(entry.at, arena)
                $0.reason = arena.string(entry.reason ?? "")
            }
        }
    }
}
