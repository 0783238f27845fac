import APNs
import APNsSimulation
import Foundation
import NIOCore
import NIOPosix
import Testing

@Suite("APNs simulator validates like APNs", .timeLimit(.minutes(1)))
struct SimulatorValidationTests {
    struct Case: Sendable, CustomStringConvertible {
        let name: String
        let request: @Sendable () -> APNsRequest
        let status: Int
        let reason: APNsReason
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(name: "bad token", request: { alertRequest(token: "xyz") }, status: 400, reason: .badDeviceToken),
        Case(name: "missing topic", request: { alertRequest(topic: nil) }, status: 400, reason: .missingTopic),
        Case(name: "topic disallowed", request: { alertRequest(topic: "com.other") }, status: 400, reason: .topicDisallowed),
        Case(name: "push type", request: { alertRequest(pushType: "shout") }, status: 400, reason: .invalidPushType),
        Case(name: "priority 7", request: { alertRequest(priority: "7") }, status: 400, reason: .badPriority),
        Case(name: "background at 10", request: { alertRequest(priority: "10", pushType: "background") }, status: 400, reason: .badPriority),
        Case(name: "expiration", request: { alertRequest(expiration: "soon") }, status: 400, reason: .badExpirationDate),
        Case(name: "collapse id", request: { alertRequest(collapseID: String(repeating: "c", count: 65)) }, status: 400, reason: .badCollapseId),
        Case(name: "apns-id", request: { alertRequest(apnsID: "not-a-uuid") }, status: 400, reason: .badMessageId),
        Case(name: "empty payload", request: { alertRequest(payload: "") }, status: 400, reason: .payloadEmpty),
        Case(name: "not JSON", request: { alertRequest(payload: "{nope") }, status: 400, reason: .payloadEmpty),
        Case(name: "too large", request: {
            alertRequest(payload: #"{"aps":{"alert":""# + String(repeating: "x", count: 4100) + #""}}"#)
        }, status: 413, reason: .payloadTooLarge),
    ]

    @Test("Invalid requests get APNs' status and reason", arguments: cases)
    func invalid(_ testCase: Case) async throws {
        let key = try TestKey()
        let simulator = try await APNsSimulator.start(simulatorConfiguration(key))
        let client = try APNsClient(configuration: clientConfiguration(key, simulator: simulator))
        let response = try await client.send(testCase.request())
        #expect(response.status == testCase.status)
        #expect(response.reason == testCase.reason)
        #expect(response.apnsID != nil)
        #expect(simulator.deliveredCount == 0)
        // The connection stays usable.
        #expect(try await client.send(alertRequest()).status == 200)
        await client.shutdown()
        try await simulator.stop()
    }

    @Test("4096-byte payloads are accepted")
    func maximumPayload() async throws {
        let key = try TestKey()
        let simulator = try await APNsSimulator.start(simulatorConfiguration(key))
        let client = try APNsClient(configuration: clientConfiguration(key, simulator: simulator))
        let prefix = #"{"aps":{"alert":""#
        let suffix = #""}}"#
        let payload = prefix + String(repeating: "y", count: 4096 - prefix.utf8.count - suffix.utf8.count) + suffix
        #expect(payload.utf8.count == 4096)
        #expect(try await client.send(alertRequest(payload: payload)).status == 200)
        await client.shutdown()
        try await simulator.stop()
    }

    @Test("Garbage, truncated TLS and plain HTTP never crash the simulator")
    func garbage() async throws {
        let key = try TestKey()
        let simulator = try await APNsSimulator.start(simulatorConfiguration(key))
        let inputs: [[UInt8]] = [
            Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8),
            [0x16, 0x03, 0x01, 0x00, 0x05, 0x01],
            (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) },
            [],
        ]
        for input in inputs {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: simulator.port).get()
            if !input.isEmpty {
                try? await channel.writeAndFlush(channel.allocator.buffer(bytes: input)).get()
            }
            try? await channel.close()
        }
        let client = try APNsClient(configuration: clientConfiguration(key, simulator: simulator))
        #expect(try await client.send(alertRequest()).status == 200)
        await client.shutdown()
        try await simulator.stop()
    }
}
