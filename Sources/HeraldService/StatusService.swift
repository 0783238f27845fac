import GRPCServer
import HeraldProtos

/// `herald.v1.PushService/Status`: the operator's view of this instance.
struct StatusService: Sendable {
    static let path = "/herald.v1.PushService/Status"

    let version: String
    let startedAtMilliseconds: Int64
    let startedAt: ContinuousClock.Instant
    let state: ServingStateCell
    let serverStats: @Sendable () -> GRPCServerStats

    func status(_ request: GRPCRequest) throws -> [UInt8] {
        // Validates the (empty) request so that garbage is INVALID_ARGUMENT.
        try ProtobufC.withUnpacked(Herald__V1__StatusRequest.self, from: request.message) { _ in }
        let stats = serverStats()
        let arena = CArena()
        var response = Herald__V1__StatusResponse.initialized()
        response.serving = switch state.current {
        case .starting: HERALD__V1__SERVING_STATE__SERVING_STATE_STARTING
        case .serving: HERALD__V1__SERVING_STATE__SERVING_STATE_SERVING
        case .draining: HERALD__V1__SERVING_STATE__SERVING_STATE_DRAINING
        }
        response.version = arena.string(version)
        response.uptime_seconds = UInt64((ContinuousClock.now - startedAt).components.seconds)
        response.started_at = arena.string(WallClock.rfc3339(milliseconds: startedAtMilliseconds))
        response.server = arena.message(Herald__V1__ServerStatus.self) {
            $0.connections_open = UInt64(stats.connectionsOpen)
            $0.rpcs_in_flight = UInt64(stats.rpcsInFlight)
            $0.rpcs_total = UInt64(stats.rpcsTotal)
        }
        return withExtendedLifetime(arena) { ProtobufC.pack(&response) }
    }
}
