import Foundation
import GRPCEngine
import NIOCore
import Testing

/// HTTP/2 requests that are not gRPC, handed to `GRPCPlainCalls` (the
/// Connect protocol's hook): admitted on the head, the body bounded, the
/// answer sent on the stream; the rest still 415, gRPC unchanged.
@Suite(.serialized) struct PlainCallsTests {
    static let limit = 64

    private func server(perConnection: Int? = nil) async throws -> TestServer {
        try await TestServer { configuration in
            configuration.maxReceiveMessageBytes = Self.limit
            if let perConnection { configuration.maxBufferedBytesPerConnection = perConnection }
            configuration.plainCalls = GRPCPlainCalls(
                admit: { path, contentType, metadata in
                    guard path.hasPrefix("/test.Echo/") else { return nil }
                    switch contentType {
                    case "application/x-echo":
                        let tag = metadata["x-tag"] ?? ""
                        return .call { body, _, loop in
                            loop.makeSucceededFuture(GRPCPlainAnswer(
                                status: 200, contentType: "application/x-echo", body: Array("\(tag):\(body.count)".utf8)))
                        }
                    case "application/x-refused":
                        return .answer(GRPCPlainAnswer(status: 403, contentType: "text/plain", body: Array("no".utf8)))
                    default:
                        return nil
                    }
                },
                refusal: { status in
                    GRPCPlainAnswer(status: status.code == .resourceExhausted ? 429 : 500, contentType: "text/plain",
                                    body: Array(status.message.utf8))
                })
        }
    }

    private func call(_ server: TestServer, _ path: String, body: [UInt8], _ headers: [String]) async throws -> String {
        let file = NSTemporaryDirectory() + "plain-\(UUID().uuidString)"
        try Data(body).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        return try await runTool("/usr/bin/nghttp", ["-v", "-t", "10", "-d", file] + headers.flatMap { ["-H", $0] } + [server.base + path])
    }

    @Test func aBodyOverTheLimitIsRefusedWithTheProtocolsAnswer() async throws {
        let server = try await server()
        let output = try await call(server, "/test.Echo/Sync", body: [UInt8](repeating: 0x61, count: Self.limit + 1),
                                    ["content-type: application/x-echo"])
        #expect(output.contains(":status: 429"))
        await server.stop()
    }

    @Test func aBodyIsHeldUnderTheConnectionsBufferBudget() async throws {
        let server = try await server(perConnection: 32)
        let output = try await call(server, "/test.Echo/Sync", body: [UInt8](repeating: 0x61, count: 48),
                                    ["content-type: application/x-echo"])
        #expect(output.contains(":status: 429"))
        #expect(output.contains("connection request buffer limit"))
        let small = try await call(server, "/test.Echo/Sync", body: [1, 2], ["content-type: application/x-echo"])
        #expect(small.contains(":status: 200"))  // the server-wide budget was given back
        await server.stop()
    }

    @Test func otherContentTypesAndPathsKeep415() async throws {
        let server = try await server()
        #expect(try await call(server, "/test.Echo/Sync", body: [1], ["content-type: application/json"]).contains(":status: 415"))
        #expect(try await call(server, "/other/Sync", body: [1], ["content-type: application/x-echo"]).contains(":status: 415"))
        await server.stop()
    }

    @Test func anAnswerOnTheHeadIsSentAtTheRequestsEnd() async throws {
        let server = try await server()
        let output = try await call(server, "/test.Echo/Sync", body: [1, 2, 3], ["content-type: application/x-refused"])
        #expect(output.contains(":status: 403"))
        await server.stop()
    }

    @Test func anAdmittedCallGetsItsWholeBodyAndHeadersAndGRPCStillWorks() async throws {
        let server = try await server()
        let output = try await call(server, "/test.Echo/Sync", body: [UInt8](repeating: 0x62, count: Self.limit),
                                    ["content-type: application/x-echo", "x-tag: t1"])
        #expect(output.contains(":status: 200"))
        #expect(output.contains("content-type: application/x-echo"))
        #expect(output.contains("t1:\(Self.limit)"))
        let grpc = try await nghttpCall(server, "/test.Echo/Sync")
        #expect(grpc.contains("grpc-status: 0"))
        await server.stop()
    }
}
