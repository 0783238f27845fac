import GRPCEngine
import HeraldCore
import HeraldProtos
import HeraldStorage

/// `herald.v1.PushService/Cancel`: every field must match, or NOT_FOUND
/// (another user's message is never revealed). Idempotent. A handed-off
/// message gets a background revoke push (queued for the delivery service,
/// owed durably until sent) and loses its fallback.
struct CancelService: Sendable {
    static let path = "/herald.v1.PushService/Cancel"

    let policy: AccessPolicy
    let store: any HeraldStore
    let scheduler: Scheduler
    let revokes: RevokeQueue
    let clock: any HeraldClock

    func cancel(_ request: GRPCRequest) async throws -> [UInt8] {
        let caller = try policy.authenticate(request.metadata)
        let (bundleID, platform, userID, campaignID, key) = try ProtobufC.withUnpacked(
            Herald__V1__CancelRequest.self, from: request.message
        ) { wire in
            var decoder = RequestDecoder()
            let bundleID = decoder.required(wire.bundle_id, "bundle_id", maxBytes: Validator.Limits.bundleID)
            let platform = decoder.platform(wire.platform)
            if platform == nil && wire.platform == HERALD__V1__PLATFORM__PLATFORM_UNSPECIFIED {
                decoder.check("is required", "platform")
            }
            let userID = decoder.required(wire.user_id, "user_id", maxBytes: Validator.Limits.userID)
            let campaignID = decoder.required(wire.campaign_id, "campaign_id", maxBytes: Validator.Limits.campaignID)
            let key = decoder.required(wire.idempotency_key, "idempotency_key", maxBytes: Validator.Limits.idempotencyKey)
            try decoder.finish()
            return (bundleID, platform!, userID, campaignID, key)
        }
        try policy.authorize(caller, bundleID: bundleID)
        let outcome = try await store.cancel(
            bundleID: bundleID, platform: platform, userID: userID, campaignID: campaignID,
            idempotencyKey: key, now: clock.now())
        switch outcome {
        case .notFound:
            throw GRPCStatus(.notFound, "no message of this user and campaign has idempotency_key \(ErrorText.quote(key)) in \(ErrorText.quote(bundleID))")
        case .cancelled(let message, let revokeDue):
            await scheduler.unschedule(id: message.id)
            if revokeDue { revokes.enqueue(message) }
        case .notCancelled:
            break
        }
        var response = Herald__V1__CancelResponse.initialized()
        response.cancelled = outcome.cancelled ? 1 : 0
        response.state = outcome.state?.wire ?? HERALD__V1__MESSAGE_STATE__MESSAGE_STATE_UNSPECIFIED
        return ProtobufC.pack(&response)
    }
}
