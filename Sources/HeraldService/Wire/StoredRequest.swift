import CInterop
public import HeraldCore
import HeraldProtos

/// Turns a stored message's request bytes into the validated domain message.
/// `idempotencyKey` is the message's stored key: a request scheduled without
/// one carries none, and the service generated it.
///
/// Injected into the `Dispatcher` so delivery stays free of protobuf-c and C
/// (the wire format is this layer's business), and so a test can hand it
/// bytes that do not decode.
public typealias StoredRequestDecoder = @Sendable (_ request: [UInt8], _ idempotencyKey: String?) throws -> PushMessage

/// The stored form of an accepted message: the Schedule request's protobuf
/// bytes, cleaned as `ScheduleService` stored them.
public enum StoredRequest {
    /// Decodes and re-validates a stored ScheduleRequest. Validation runs
    /// again because limits may have tightened since it was accepted; what it
    /// refuses is reported as the thrown error (the message ends FAILED).
    public static func decode(_ request: [UInt8], idempotencyKey: String?) throws -> PushMessage {
        // Unpacked into the thread's arena: no malloc and free per field.
        let input = try ProtobufC.withArena { arena in
            try ProtobufC.withUnpacked(Herald__V1__ScheduleRequest.self, from: request, arena: arena) { wire in
                var decoder = RequestDecoder()
                let input = decoder.scheduleInput(wire)
                try decoder.finish()
                return input
            }
        }
        var message = try Validator.validate(RenderInput(message: input.message), generateIdempotencyKey: { idempotencyKey ?? "" })
        // The §4b fields the dispatcher reads at claim time; re-checked like
        // the rest (a stored `local_send_time` that no longer parses fails).
        if let text = input.localSendTime {
            guard let time = LocalSendTime(parsing: text) else {
                throw ValidationError([FieldViolation(field: "local_send_time", reason: LocalSendTime.problem(text) ?? "invalid")])
            }
            message.localSendTime = time
        }
        message.transactional = input.transactional
        return message
    }
}
