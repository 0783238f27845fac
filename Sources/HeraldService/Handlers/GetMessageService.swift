import GRPCEngine
import HeraldCore
import HeraldProtos
import HeraldStorage

/// `herald.v1.PushService/GetMessage`: a message by bundle plus message_id
/// or idempotency_key, with its timeline and one entry per device attempted.
/// NOT_FOUND for anything the token may not see (another bundle's message,
/// a bundle the token does not allow): the read side never confirms that
/// something exists to a caller who may not see it.
struct GetMessageService: Sendable {
    static let path = "/herald.v1.PushService/GetMessage"

    let policy: AccessPolicy
    let store: any MessageReadSide

    func get(_ request: GRPCRequest) async throws -> [UInt8] {
        let caller = try policy.authenticate(request.metadata)
        let (bundleID, messageID, key) = try ProtobufC.withUnpacked(Herald__V1__GetMessageRequest.self, from: request.message) { wire in
            var decoder = RequestDecoder()
            let bundleID = decoder.required(wire.bundle_id, "bundle_id", maxBytes: Validator.Limits.bundleID)
            let messageID = decoder.optionalString(wire.message_id, "message_id")
            let key = decoder.optionalString(wire.idempotency_key, "idempotency_key")
            switch (messageID, key) {
            case (nil, nil): decoder.check("set exactly one of message_id or idempotency_key", "message_id")
            case (.some, .some): decoder.check("set exactly one of message_id or idempotency_key, not both", "message_id")
            case (.some(let id), nil) where id.utf8.count > 64:
                decoder.check("is \(id.utf8.count) bytes; the limit is 64", "message_id")
            case (nil, .some(let key)) where key.utf8.count > Validator.Limits.idempotencyKey:
                decoder.check("is \(key.utf8.count) bytes; the limit is \(Validator.Limits.idempotencyKey)", "idempotency_key")
            default: break
            }
            try decoder.finish()
            return (bundleID, messageID, key)
        }
        let notFound = GRPCStatus(.notFound, messageID.map { "no message \(ErrorText.quote($0)) in \(ErrorText.quote(bundleID))" }
            ?? "no message holds idempotency_key \(ErrorText.quote(key ?? "")) in \(ErrorText.quote(bundleID))")
        guard caller?.allows(bundleID: bundleID) ?? true else { throw notFound }
        let found = if let messageID {
            try await store.messageDetail(bundleID: bundleID, messageID: messageID)
        } else {
            try await store.messageDetail(bundleID: bundleID, idempotencyKey: key ?? "")
        }
        guard let detail = found else { throw notFound }
        let arena = CArena()
        var response = Herald__V1__GetMessageResponse.initialized()
        response.message = ReadSideWire.summary(detail.message, arena)
        let timeline = ReadSideWire.timeline(detail, arena)
        response.n_timeline = timeline.count
        response.timeline = arena.pointerArray(timeline)
        let devices = ReadSideWire.deliveries(detail, arena)
        response.n_devices = devices.count
        response.devices = arena.pointerArray(devices)
        return withExtendedLifetime(arena) { ProtobufC.pack(&response) }
    }
}
