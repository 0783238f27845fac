import GRPCEngine
import HeraldCore
import HeraldProtos

/// `grpc.health.v1.Health/Check`: `""` and every Herald service answer SERVING
/// while serving with a writable store and NOT_SERVING otherwise; unknown names are NOT_FOUND.
struct HealthService: Sendable {
    static let checkPath = "/grpc.health.v1.Health/Check"

    /// The names this instance answers for.
    static let services: Set<String> = [
        "", "grpc.health.v1.Health", "herald.v1.PushService", "herald.v1.DeviceService",
    ]

    let state: ServingStateCell
    /// The two possible answers, packed once: Check is the load balancers'
    /// hot path.
    private let serving: [UInt8]
    private let notServing: [UInt8]

    init(state: ServingStateCell) {
        self.state = state
        serving = Self.packed(GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING)
        notServing = Self.packed(GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING)
    }

    func check(_ request: GRPCRequest) throws -> [UInt8] {
        // The empty message is `service: ""`: skip the parser for it.
        if !request.message.isEmpty {
            let service = try ProtobufC.withUnpacked(Grpc__Health__V1__HealthCheckRequest.self, from: request.message) {
                $0.service.map { String(cString: $0) } ?? ""
            }
            guard Self.services.contains(service) else {
                throw GRPCStatus(.notFound, "unknown service " + ErrorText.quote(service))
            }
        }
        return state.isReady ? serving : notServing
    }

    private static func packed(_ status: Grpc__Health__V1__HealthCheckResponse__ServingStatus) -> [UInt8] {
        var response = Grpc__Health__V1__HealthCheckResponse.initialized()
        response.status = status
        return ProtobufC.pack(&response)
    }
}
