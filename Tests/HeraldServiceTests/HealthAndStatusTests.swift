import GRPCEngine
import HeraldProtos
import Testing

@testable import HeraldService

@Suite("Health and Status handlers")
struct HealthAndStatusTests {
    private func healthStatus(_ bytes: [UInt8]) throws -> Grpc__Health__V1__HealthCheckResponse__ServingStatus {
        try ProtobufC.withUnpacked(Grpc__Health__V1__HealthCheckResponse.self, from: bytes) { $0.status }
    }

    private func checkRequest(_ service: String) -> [UInt8] {
        let arena = CArena()
        var request = Grpc__Health__V1__HealthCheckRequest.initialized()
        request.service = arena.string(service)
        return withExtendedLifetime(arena) { ProtobufC.pack(&request) }
    }

    @Test("every Herald service name follows the serving state", arguments: Array(HealthService.services))
    func healthFollowsServingState(service: String) throws {
        let state = ServingStateCell(.serving)
        let health = HealthService(state: state)
        let request = GRPCRequest(path: HealthService.checkPath, message: checkRequest(service))
        #expect(try healthStatus(health.check(request)) == GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING)
        state.set(.draining)
        #expect(try healthStatus(health.check(request)) == GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING)
        state.set(.starting)
        #expect(try healthStatus(health.check(request)) == GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING)
    }

    @Test func unknownServiceIsNotFound() {
        let health = HealthService(state: ServingStateCell(.serving))
        let request = GRPCRequest(path: HealthService.checkPath, message: checkRequest("acme.Nope"))
        #expect(throws: GRPCStatus(.notFound, "unknown service \"acme.Nope\"")) { try health.check(request) }
    }

    @Test("garbage instead of a request message is INVALID_ARGUMENT", arguments: [
        [0xFF, 0xFF, 0xFF], [0x0A, 0x05, 0x61], [0x0A],
    ] as [[UInt8]])
    func garbageIsInvalidArgument(bytes: [UInt8]) {
        let health = HealthService(state: ServingStateCell(.serving))
        #expect(throws: GRPCStatus.self) {
            do { _ = try health.check(GRPCRequest(path: HealthService.checkPath, message: bytes)) } catch let status as GRPCStatus {
                #expect(status.code == .invalidArgument)
                #expect(status.message.contains("grpc.health.v1.HealthCheckRequest"))
                throw status
            }
        }
    }

    @Test func statusReportsVersionUptimeStateAndServerCounters() throws {
        let state = ServingStateCell(.serving)
        let status = StatusService(
            version: "9.9.9",
            startedAtMilliseconds: 1_795_000_000_000,
            startedAt: .now - .seconds(42),
            state: state,
            serverStats: { GRPCServerStats(connectionsOpen: 3, rpcsInFlight: 2, rpcsTotal: 1234) }
        )
        let bytes = try status.status(GRPCRequest(path: StatusService.path, message: []))
        try ProtobufC.withUnpacked(Herald__V1__StatusResponse.self, from: bytes) { response in
            #expect(response.serving == HERALD__V1__SERVING_STATE__SERVING_STATE_SERVING)
            #expect(String(cString: response.version) == "9.9.9")
            #expect(response.uptime_seconds >= 42)
            #expect(String(cString: response.started_at) == "2026-11-18T11:06:40Z")
            let server = try #require(response.server)
            #expect(server.pointee.connections_open == 3)
            #expect(server.pointee.rpcs_in_flight == 2)
            #expect(server.pointee.rpcs_total == 1234)
        }
        state.set(.draining)
        let draining = try status.status(GRPCRequest(path: StatusService.path, message: []))
        try ProtobufC.withUnpacked(Herald__V1__StatusResponse.self, from: draining) {
            #expect($0.serving == HERALD__V1__SERVING_STATE__SERVING_STATE_DRAINING)
        }
    }
}
