import GRPCEngine
import HeraldCore
import HeraldPrimitives
import HeraldProtos
import HeraldStorage

/// `herald.v1.PushService/ReportEvent`: the device SDK says it displayed
/// (or the user opened) a message. DISPLAYED stops a handed-off message's
/// fallback alert; OPENED is recorded.
struct ReportEventService: Sendable {
    static let path = "/herald.v1.PushService/ReportEvent"

    let policy: AccessPolicy
    let store: any HeraldStore
    let scheduler: Scheduler
    let clock: any HeraldClock
    /// The bundles' rules: with caps, a DISPLAYED report counts the message
    /// against its user's caps (SPEC §4b "What counts"), once.
    var deliveryPolicies = DeliveryPolicyHolder()

    func report(_ request: GRPCRequest) async throws -> [UInt8] {
        let caller = try policy.authenticate(request.metadata)
        let (bundleID, platform, userID, key, displayed, token) = try ProtobufC.withUnpacked(
            Herald__V1__ReportEventRequest.self, from: request.message
        ) { wire in
            var decoder = RequestDecoder()
            let bundleID = decoder.required(wire.bundle_id, "bundle_id", maxBytes: Validator.Limits.bundleID)
            let platform = decoder.platform(wire.platform)
            if wire.platform == HERALD__V1__PLATFORM__PLATFORM_UNSPECIFIED { decoder.check("is required", "platform") }
            let userID = decoder.required(wire.user_id, "user_id", maxBytes: Validator.Limits.userID)
            let key = decoder.required(wire.idempotency_key, "idempotency_key", maxBytes: Validator.Limits.idempotencyKey)
            let displayed: Bool
            switch wire.event {
            case HERALD__V1__MESSAGE_EVENT__MESSAGE_EVENT_DISPLAYED: displayed = true
            case HERALD__V1__MESSAGE_EVENT__MESSAGE_EVENT_OPENED: displayed = false
            default:
                decoder.check("must be MESSAGE_EVENT_DISPLAYED or MESSAGE_EVENT_OPENED", "event")
                displayed = false
            }
            // Held to RegisterDevice's rules (SPEC §7): optional, but when
            // given an APNs token (hex) or an FCM registration token of at
            // most 4,096 bytes; APNs tokens in one spelling, so a repeated
            // report finds its row (one per message, device and event).
            var token = decoder.string(wire.device_token, "device_token")
            if token.utf8.count > Validator.Limits.fcmToken {
                decoder.check("is \(token.utf8.count) bytes; the limit is \(Validator.Limits.fcmToken)", "device_token")
            } else if let platform, !token.isEmpty {
                decoder.check(Validator.deviceTokenProblem(token, platform: platform), "device_token")
                if platform == .ios { token = token.lowercased() }
            }
            if let occurredAt = decoder.optionalString(wire.occurred_at, "occurred_at") {
                do throws(RFC3339ParseError) {
                    _ = try RFC3339.parse(occurredAt)
                } catch {
                    decoder.check("not an RFC 3339 timestamp: \(error.reason)", "occurred_at")
                }
            }
            try decoder.finish()
            return (bundleID, platform!, userID, key, displayed, token)
        }
        try policy.authorize(caller, bundleID: bundleID)
        guard let message = try await store.message(bundleID: bundleID, idempotencyKey: key),
              message.platform == platform, message.userID == userID
        else {
            throw GRPCStatus(.notFound, "no message of this user has idempotency_key \(ErrorText.quote(key)) in \(ErrorText.quote(bundleID))")
        }
        let now = clock.now()
        // Recorded first: if the handoff push is still being recorded as
        // HANDED_OFF (the device can be faster), the dispatcher finds this
        // record right after its transition and applies DISPLAYED itself.
        try await store.recordOutcome(DeviceOutcome(
            messageID: message.id, deviceToken: token, kind: displayed ? .displayed : .opened, at: now))
        var state = try await store.message(id: message.id)?.state ?? message.state
        if displayed, let next = DeliveryPolicy().displayed(in: state) {
            if try await store.transition(id: message.id, from: state, to: next.to, dueAt: nil, providerMessageID: nil, lastError: nil, now: now) {
                if next.dropsFallback { await scheduler.unschedule(id: message.id) }
                state = next.to
                try await countDisplayed(message, at: now)
            } else {
                state = try await store.message(id: message.id)?.state ?? state
            }
        }
        var response = Herald__V1__ReportEventResponse.initialized()
        response.state = state.wire
        return ProtobufC.pack(&response)
    }

    /// A context-aware message the app displayed reached its user: with
    /// caps on its bundle it counts, once (idempotent by message; a message
    /// counted when its alert was sent is not counted again), even over the
    /// cap — the user saw it. Transactional messages never count.
    private func countDisplayed(_ message: StoredMessage, at now: Int64) async throws {
        guard let rules = deliveryPolicies.rules(for: message.bundleID), !rules.caps.isEmpty || !rules.campaignCaps.isEmpty,
              let ledger = store as? any PolicyLedger,
              (try? StoredRequest.decode(message.request, idempotencyKey: message.idempotencyKey).transactional) != true
        else { return }
        _ = try await ledger.recordCountedSend(CountedSend(
            bundleID: message.bundleID, userID: message.userID, campaignID: message.campaignID, messageID: message.id, at: now))
    }
}
