import CInterop
import GRPCEngine
import HeraldCore
import HeraldPrimitives
import HeraldProtos

/// `herald.v1.PushService/Render`: exactly what would be sent to APNs or FCM.
/// Stores and sends nothing; CPU only, so it runs on the event loop.
/// The delivery policy (SPEC §4b) does not change what a push looks like:
/// Schedule's `local_send_time` and `transactional` only decide when (and
/// whether) it goes, so Render has neither and shows the same push.
struct RenderService: Sendable {
    static let path = "/herald.v1.PushService/Render"

    let policy: AccessPolicy
    /// The wall clock, in milliseconds since the epoch (injected for tests).
    let now: @Sendable () -> Int64
    /// The bundles' delivery policies: Render names the bundle's (it changes
    /// when an alert goes, never what it is).
    var deliveryPolicies = DeliveryPolicyHolder()

    func render(_ request: GRPCRequest) throws -> [UInt8] {
        let caller = try policy.authenticate(request.metadata)
        // One arena holds the parsed request and the reply's structs; it is
        // reset when the reply has been packed.
        return try ProtobufC.withArena { arena in
            let input = try ProtobufC.withUnpacked(
                Herald__V1__RenderRequest.self, from: request.message, arena: arena
            ) { wire in
                var decoder = RequestDecoder()
                let message = decoder.messageInput(
                    bundleID: wire.bundle_id, platform: wire.platform, content: wire.content,
                    priority: wire.priority,
                    ttlSeconds: wire.ttl_case == HERALD__V1__RENDER_REQUEST__TTL_TTL_SECONDS ? wire.ttl_seconds : nil,
                    collapseID: wire.collapse_id, ios: wire.ios, android: wire.android,
                    idempotencyKey: wire.idempotency_key)
                let input = RenderInput(
                    message: message,
                    locale: decoder.localeTag(wire.locale, "locale"),
                    deviceToken: decoder.optionalString(wire.device_token, "device_token"))
                try decoder.finish()
                return input
            }
            try policy.authorize(caller, bundleID: input.message.bundleID)
            let message = try Validator.validate(input, generateIdempotencyKey: UUIDv4.make)
            var response = try reply(message, input, arena: arena)
            return ProtobufC.pack(&response)
        }
    }

    /// The reply's structs, in `arena`.
    private func reply(_ message: PushMessage, _ input: RenderInput, arena: ProtobufCArena) throws -> Herald__V1__RenderResponse {
        var response = Herald__V1__RenderResponse.initialized()
        switch message.platform {
        case .ios:
            let milliseconds = now()
            let sendTime = Timestamp(seconds: milliseconds / 1000, nanoseconds: Int32(milliseconds % 1000) * 1_000_000)
            let rendering = try APNsRenderer.render(
                message, locale: input.locale, deviceToken: input.deviceToken,
                apnsID: Self.apnsID(), sendTime: sendTime)
            response.rendering_case = HERALD__V1__RENDER_RESPONSE__RENDERING_APNS
            response.apns = arena.message(Herald__V1__ApnsRendering.self) { apns in
                apns.path = arena.string(rendering.path)
                let headers = rendering.headers
                apns.n_headers = headers.count
                apns.headers = arena.pointerArray(count: headers.count) { index in
                    arena.message(Herald__V1__ApnsRendering__HeadersEntry.self) {
                        $0.key = arena.string(headers[index].name)
                        $0.value = arena.string(headers[index].value)
                    }
                }
                apns.payload_json = arena.string(bytes: rendering.payload)
                apns.payload_bytes = UInt32(rendering.payload.count)
            }
            fill(&response, resolvedLocale: rendering.resolvedLocale, warnings: rendering.warnings + policyNotes(message), arena: arena)
        case .android:
            let rendering = try FCMRenderer.render(message, locale: input.locale, deviceToken: input.deviceToken)
            response.rendering_case = HERALD__V1__RENDER_RESPONSE__RENDERING_FCM
            response.fcm = arena.message(Herald__V1__FcmRendering.self) {
                $0.message_json = arena.string(rendering.messageJSON)
            }
            fill(&response, resolvedLocale: rendering.resolvedLocale, warnings: rendering.warnings + policyNotes(message), arena: arena)
        }
        return response
    }

    /// The bundle's delivery policy in one line, when it has one: when this
    /// alert would go (SPEC §4b), not what it is.
    private func policyNotes(_ message: PushMessage) -> [String] {
        guard let rules = deliveryPolicies.rules(for: message.bundleID) else { return [] }
        return ["delivery policy \(rules.canonical): alert pushes of this bundle wait for its quiet hours "
            + "and caps in each device's time zone (transactional ones do not); this is what goes when they allow "
            + "(docs/DELIVERY-POLICY.md)"]
    }

    /// A random `apns-id` (see `ThreadRandom`).
    private static func apnsID() -> String {
        var random = ThreadRandom()
        return UUIDv4.make(randA: random.next(), randB: random.next())
    }

    private func fill(
        _ response: inout Herald__V1__RenderResponse, resolvedLocale: String?, warnings: [String], arena: ProtobufCArena
    ) {
        response.resolved_locale = arena.string(resolvedLocale ?? "")
        response.n_warnings = warnings.count
        response.warnings = warnings.isEmpty ? nil : {
            let array = arena.allocate(MemoryLayout<UnsafeMutablePointer<CChar>?>.stride * warnings.count)
                .bindMemory(to: UnsafeMutablePointer<CChar>?.self, capacity: warnings.count)
            for (index, warning) in warnings.enumerated() { (array + index).initialize(to: arena.string(warning)) }
            return array
        }()
    }
}
