import Foundation
import Testing

@testable import GRPCEngine

/// When the server answers, and how it ends a connection it cannot answer on
/// (issue 24 items 11 and 12). Real sockets; nested in the serialized loopback suite.
extension LoopbackTests {
@Suite("Response timing and failed submissions (real sockets)", .timeLimit(.minutes(1)))
struct ResponseTimingTests {
    static let plainPost = [(":method", "POST"), (":scheme", "http"), (":path", "/"), (":authority", "localhost")]

    /// RST_STREAM error codes the server sent for `stream` among `frames`.
    static func resets(_ frames: [RawHTTP2Client.Frame], stream: UInt32) -> [UInt32] {
        frames.filter { $0.type == 3 && $0.streamID == stream }.map { $0.payload.reduce(0) { $0 << 8 | UInt32($1) } }
    }

    /// Frames the server sent in answer to everything sent so far: two PING
    /// round trips (nghttp2 sends a PING ACK ahead of the HEADERS queued with
    /// it, so a response submitted while the first PING was read comes before
    /// the second ACK). Nil at EOF.
    static func settle(_ client: RawHTTP2Client) -> [RawHTTP2Client.Frame]? {
        guard let first = client.sync(), let second = client.sync() else { return nil }
        return first + second
    }

    /// Frames until `done` holds or EOF.
    static func read(_ client: RawHTTP2Client, until done: ([RawHTTP2Client.Frame]) -> Bool) -> [RawHTTP2Client.Frame] {
        var frames: [RawHTTP2Client.Frame] = []
        while !done(frames), let frame = client.readFrame() { frames.append(frame) }
        return frames
    }

    // MARK: Item 12: a request that is not gRPC is answered after its END_STREAM

    @Test func nonGRPCRequestIsNotAnsweredBeforeItEndsSoItsBodyIsStillChecked() async throws {
        let server = try await TestServer()
        let client = try RawHTTP2Client(port: server.port)
        // h2spec 8.1.2.6: content-length 1, then 4 bytes of DATA.
        client.sendHeaders(streamID: 1, Self.plainPost + [("content-length", "1")])
        let beforeEnd = try #require(Self.settle(client))
        #expect(!beforeEnd.contains { $0.streamID == 1 }, "no answer while the request is still arriving")
        client.sendData(streamID: 1, Array("test".utf8), endStream: true)
        let frames = Self.read(client) { !Self.resets($0, stream: 1).isEmpty }
        #expect(Self.resets(frames, stream: 1) == [1], "RST_STREAM(PROTOCOL_ERROR) for the malformed request")
        #expect(!frames.contains { $0.streamID == 1 && $0.type == 1 }, "no response HEADERS")
        client.disconnect()
        await server.stop()
    }

    @Test func pseudoHeaderInTrailersOfANonGRPCRequestIsAProtocolError() async throws {
        let server = try await TestServer()
        let client = try RawHTTP2Client(port: server.port)
        client.sendHeaders(streamID: 1, Self.plainPost)
        client.sendData(streamID: 1, Array("x".utf8))
        let beforeEnd = try #require(Self.settle(client))
        #expect(!beforeEnd.contains { $0.streamID == 1 })
        client.sendHeaders(streamID: 1, [(":method", "POST"), ("trailer", "bad")], endStream: true)
        let frames = Self.read(client) { !Self.resets($0, stream: 1).isEmpty }
        #expect(Self.resets(frames, stream: 1) == [1])
        client.disconnect()
        await server.stop()
    }

    @Test func wellFormedNonGRPCPostGets415AfterItsEndWithoutAReset() async throws {
        let server = try await TestServer()
        let client = try RawHTTP2Client(port: server.port)
        client.sendHeaders(streamID: 1, Self.plainPost + [("content-type", "text/plain")])
        client.sendData(streamID: 1, Array("hello".utf8))
        let beforeEnd = try #require(Self.settle(client))
        #expect(!beforeEnd.contains { $0.streamID == 1 })
        client.sendData(streamID: 1, Array(" world".utf8), endStream: true)
        let frames = Self.read(client) { $0.contains { $0.streamID == 1 && $0.flags & 0x1 != 0 } }
        #expect(frames.contains { $0.streamID == 1 && $0.type == 1 }, "the 415 HEADERS")
        let body = frames.filter { $0.streamID == 1 && $0.type == 0 }.flatMap(\.payload)
        #expect(String(decoding: body, as: UTF8.self).contains("application/grpc"))
        // Its request was complete: nothing to reset.
        let rest = try #require(Self.settle(client))
        #expect(Self.resets(frames + rest, stream: 1).isEmpty)
        client.disconnect()
        await server.stop()
    }

    @Test func gRPCErrorsStillComeBeforeTheRequestEnds() async throws {
        let server = try await TestServer()
        let client = try RawHTTP2Client(port: server.port)
        client.sendRequestHeaders(streamID: 1, path: "/test.Echo/Nope")
        // The request never ends: the answer and the reset come anyway.
        let frames = Self.read(client) { !Self.resets($0, stream: 1).isEmpty }
        #expect(frames.contains { $0.streamID == 1 && $0.type == 1 && $0.flags & 0x1 != 0 },
                "Trailers-Only UNIMPLEMENTED at END_HEADERS")
        #expect(Self.resets(frames, stream: 1) == [0], "then RST_STREAM(NO_ERROR): stop sending")
        client.disconnect()
        await server.stop()
    }

    @Test func nonGRPCRequestThatNeverEndsIsAnsweredAtTheReceiveTimeout() async throws {
        let server = try await TestServer { $0.requestReceiveTimeout = .milliseconds(300) }
        let client = try RawHTTP2Client(port: server.port)
        client.sendHeaders(streamID: 1, [(":method", "PUT"), (":scheme", "http"), (":path", "/"), (":authority", "localhost")])
        let frames = Self.read(client) { !Self.resets($0, stream: 1).isEmpty }
        #expect(frames.contains { $0.streamID == 1 && $0.type == 1 }, "the 405 HEADERS")
        #expect(Self.resets(frames, stream: 1) == [0])
        client.disconnect()
        await server.stop()
        #expect(server.server.stats().rpcsInFlight == 0)
    }

    // MARK: Item 11: a failed submission closes the connection outside nghttp2's callbacks

    @Test func failedSubmissionClosesTheConnectionOnlyAfterNghttp2Returns() async throws {
        let server = try await TestServer()
        let client = try RawHTTP2Client(port: server.port)
        #expect(client.sync() != nil)
        server.server.testFaults.failSubmissions.store(true, ordering: .relaxed)
        // One write, parsed by one nghttp2 receive: a call answered inline
        // (its response and then its RST_STREAM fail), then more frames for
        // that stream and another call.
        client.batch {
            client.sendRequestHeaders(streamID: 1, path: "/test.Echo/Sync")
            client.sendMessage(streamID: 1, Array("one".utf8))
            client.sendReset(streamID: 1)
            client.sendRequestHeaders(streamID: 3, path: "/test.Echo/Sync")
            client.sendMessage(streamID: 3, Array("two".utf8))
        }
        var frames: [RawHTTP2Client.Frame] = []
        while let frame = client.readFrame() { frames.append(frame) }  // until the server closes
        #expect(!frames.contains { $0.type == 1 && ($0.streamID == 1 || $0.streamID == 3) }, "no response went out")
        #expect(server.server.testFaults.teardownsInsideSession.load(ordering: .relaxed) == 0,
                "the connection was not torn down inside nghttp2's receive")
        server.server.testFaults.failSubmissions.store(false, ordering: .relaxed)
        let output = try await nghttpCall(server, "/test.Echo/Sync", message: Array("still serving".utf8))
        #expect(output.contains("still serving"))
        #expect(output.contains("grpc-status: 0"))
        client.disconnect()
        await server.stop()
        #expect(server.server.stats().rpcsInFlight == 0)
    }
}
}
