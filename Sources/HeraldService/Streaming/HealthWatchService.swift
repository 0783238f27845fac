import HeraldProtos

/// `grpc.health.v1.Health/Watch`: the current status at once, then each
/// change, for as long as the client listens (grpc/grpc
/// doc/health-checking.md). Engine-agnostic: the engine hands in the request
/// message and a way to send one response message.
struct HealthWatchService: Sendable {
    static let path = "/grpc.health.v1.Health/Watch"

    typealias Status = Grpc__Health__V1__HealthCheckResponse__ServingStatus

    let state: ServingStateCell

    /// Streams the status of the service named in `request` until the client
    /// leaves (the task is cancelled) or the server drains.
    ///
    /// Draining sends NOT_SERVING and then returns: shutdown waits for
    /// in-flight RPCs, and a watch that never ended would hold the drain for
    /// its whole bound. An unknown name gets SERVICE_UNKNOWN and, as the
    /// health protocol asks, the stream stays open (the set of names is fixed,
    /// so nothing follows until the end).
    ///
    /// - Throws: `INVALID_ARGUMENT` when `request` is not a
    ///   `HealthCheckRequest`; whatever `send` throws.
    func watch(request: [UInt8], send: @Sendable ([UInt8]) async throws -> Void) async throws {
        let service = try Self.serviceName(request)
        let known = HealthService.services.contains(service)
        // Subscribed before the first send, so no change made meanwhile is lost.
        let changes = state.changes()
        var sent: Status?
        if !known {
            try await send(Self.packed(GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVICE_UNKNOWN))
        }
        for await readiness in changes {
            if known {
                let status = Self.status(readiness)
                // Coalesced changes may repeat what the client already has.
                if status != sent {
                    try await send(Self.packed(status))
                    sent = status
                }
            }
            if readiness.state == .draining { return }
        }
        // The stream ended because the task was cancelled: the client left or
        // the engine ended the RPC. Nothing more to say.
    }

    /// The status Check answers (HealthService.check decides the same way:
    /// SERVING only while serving with a writable store).
    static func status(_ readiness: Readiness) -> Status {
        readiness.isReady
            ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING
            : GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING
    }

    /// The service named in a `HealthCheckRequest`; the empty message is `""`.
    static func serviceName(_ request: [UInt8]) throws -> String {
        guard !request.isEmpty else { return "" }
        return try ProtobufC.withUnpacked(Grpc__Health__V1__HealthCheckRequest.self, from: request) {
            $0.service.map { String(cString: $0) } ?? ""
        }
    }

    static func packed(_ status: Status) -> [UInt8] {
        var response = Grpc__Health__V1__HealthCheckResponse.initialized()
        response.status = status
        return ProtobufC.pack(&response)
    }
}
