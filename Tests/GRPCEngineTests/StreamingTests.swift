import Foundation
import Testing

@testable import GRPCEngine

/// Server-streaming and bidirectional calls over real loopback sockets. Nested in
/// the serialized loopback suite: the raw client's blocking reads hold a
/// cooperative thread, and the handlers under test need the other one.
extension LoopbackTests {
@Suite("Streaming calls (real sockets)", .timeLimit(.minutes(1)))
struct StreamingTests {
    @Test func serverStreamingSendsEveryMessageThenOK() async throws {
        let server = try await TestServer()
        let output = try await nghttpCall(server, "/test.Stream/Count", message: Array("3".utf8))
        #expect(output.contains(":status: 200"))
        #expect(output.contains("item-0;"))
        #expect(output.contains("item-2;"))
        #expect(output.contains("grpc-status: 0"))
        await server.stop()
    }

    @Test func serverStreamingWithNoMessagesIsTrailersOnlyOK() async throws {
        let server = try await TestServer()
        let output = try await nghttpCall(server, "/test.Stream/Count", message: Array("0".utf8))
        #expect(output.contains("grpc-status: 0"))
        await server.stop()
    }

    @Test func handlerErrorAfterAMessageEndsWithItsStatusInTrailers() async throws {
        let server = try await TestServer()
        let output = try await nghttpCall(server, "/test.Stream/FailAfterOne")
        #expect(output.contains("first"))
        #expect(output.contains("grpc-status: 5"))
        #expect(output.contains("grpc-message: gone after one"))
        await server.stop()
    }

    @Test func bidirectionalAnswersBeforeTheRequestEnds() async throws {
        let server = try await TestServer()
        let client = try RawHTTP2Client(port: server.port)
        client.sendRequestHeaders(streamID: 1, path: "/test.Stream/Echo")
        client.sendMessage(streamID: 1, Array("ping-1".utf8), endStream: false)
        #expect(Self.nextData(client, streamID: 1) == GRPCMessageFramer.frame(Array("ping-1".utf8)))
        client.sendMessage(streamID: 1, Array("ping-2".utf8), endStream: true)
        #expect(Self.nextData(client, streamID: 1) == GRPCMessageFramer.frame(Array("ping-2".utf8)))
        var ended = false
        while !ended, let frame = client.readFrame() {
            if frame.streamID == 1, frame.type == 1, frame.flags & 0x1 != 0 { ended = true }
            #expect(frame.type != 3, "no RST_STREAM")
        }
        #expect(ended)
        client.disconnect()
        await server.stop()
        #expect(server.server.stats().rpcsInFlight == 0)
    }

    @Test func bidirectionalEchoThroughNghttp() async throws {
        let server = try await TestServer()
        let output = try await nghttpCall(server, "/test.Stream/Echo", message: Array("one-shot".utf8))
        #expect(output.contains("one-shot"))
        #expect(output.contains("grpc-status: 0"))
        await server.stop()
    }

    /// A client that never opens its flow-control window holds the handler in `send`.
    @Test func sendSuspendsUnderFlowControl() async throws {
        let server = try await TestServer()
        let client = try RawHTTP2Client(port: server.port)
        client.sendRequestHeaders(streamID: 1, path: "/test.Stream/Flood")
        client.sendMessage(streamID: 1, [])
        var received = 0
        while received < 65_535, let frame = client.readFrame() {
            if frame.type == 0, frame.streamID == 1 { received += frame.payload.count }
        }
        #expect(received == 65_535, "the initial stream window, no more")
        // 64 KiB in flight + at most 64 KiB queued: a handler without backpressure would be at 64.
        let sentWhileBlocked = server.sends.count.load(ordering: .relaxed)
        #expect(sentWhileBlocked <= (65_535 + GRPCConnection.streamingHighWater) / (16 * 1024) + 2)
        // Open both windows wide: the rest flows and the call ends with OK.
        let increment: UInt32 = 1 << 30
        let payload = [UInt8(increment >> 24), UInt8(increment >> 16 & 0xFF), UInt8(increment >> 8 & 0xFF), UInt8(increment & 0xFF)]
        client.sendFrame(type: 8, flags: 0, streamID: 0, payload: payload)
        client.sendFrame(type: 8, flags: 0, streamID: 1, payload: payload)
        var ended = false
        while !ended, let frame = client.readFrame() {
            if frame.type == 0, frame.streamID == 1 { received += frame.payload.count }
            if frame.streamID == 1, frame.type == 1, frame.flags & 0x1 != 0 { ended = true }
        }
        #expect(ended)
        #expect(received == 64 * (16 * 1024 + 5))
        #expect(server.sends.count.load(ordering: .relaxed) == 64)
        client.disconnect()
        await server.stop()
    }

    @Test func rstStreamCancelsTheStreamingHandler() async throws {
        let server = try await TestServer()
        let client = try RawHTTP2Client(port: server.port)
        client.sendRequestHeaders(streamID: 1, path: "/test.Stream/Hang", extra: [("x-key", "stream-rst")])
        client.sendMessage(streamID: 1, [])
        var entered = server.entered.makeAsyncIterator()
        await entered.next()
        client.sendReset(streamID: 1)
        var cancelled = server.cancelled.makeAsyncIterator()
        #expect(await cancelled.next() == "stream-rst")
        client.disconnect()
        await server.stop()
        #expect(server.server.stats().rpcsInFlight == 0)
    }

    @Test func deadlineEndsAStreamWithDeadlineExceededTrailers() async throws {
        let server = try await TestServer()
        // The handler's first message must go out before the deadline for
        // this to test trailers after a started stream: a second leaves room
        // for a handler task scheduled late on a loaded machine (100 ms did not).
        let output = try await nghttpCall(server, "/test.Stream/Hang", headers: ["grpc-timeout: 1S", "x-key: late"])
        #expect(output.contains("started"))
        #expect(output.contains("grpc-status: 4"))
        var cancelled = server.cancelled.makeAsyncIterator()
        #expect(await cancelled.next() == "late")
        await server.stop()
    }

    @Test func drainEndsOpenStreamsWithUnavailableTrailers() async throws {
        let server = try await TestServer()
        async let output = nghttpCall(server, "/test.Stream/Hang", headers: ["x-key: drain"])
        var entered = server.entered.makeAsyncIterator()
        await entered.next()
        await server.server.shutdownGracefully(timeout: .seconds(20))
        let text = try await output
        #expect(text.contains("started"))
        #expect(text.contains("grpc-status: 14"))
        #expect(text.contains("grpc-message: server is shutting down"))
    }

    @Test func drainLetsAStreamingHandlerThatEndsByItselfFinish() async throws {
        let server = try await TestServer()
        let client = try RawHTTP2Client(port: server.port)
        client.sendRequestHeaders(streamID: 1, path: "/test.Stream/UntilReleased")
        client.sendMessage(streamID: 1, [], endStream: true)
        #expect(Self.nextData(client, streamID: 1) == GRPCMessageFramer.frame(Array("started".utf8)))
        let shutdown = Task { await server.server.shutdownGracefully(timeout: .seconds(20)) }
        // The first GOAWAY says the drain reached this connection …
        var goaway = false
        while !goaway, let frame = client.readFrame() { goaway = frame.type == 7 }
        #expect(goaway)
        // … and the handler, told to end only now, still sends and returns.
        server.release.yield()
        #expect(Self.nextData(client, streamID: 1) == GRPCMessageFramer.frame(Array("bye".utf8)))
        var ended = false
        while !ended, let frame = client.readFrame() {
            #expect(frame.type != 3, "no RST_STREAM")
            if frame.streamID == 1, frame.type == 1, frame.flags & 0x1 != 0 { ended = true }
        }
        #expect(ended)
        client.disconnect()
        await shutdown.value
    }

    static func nextData(_ client: RawHTTP2Client, streamID: UInt32) -> [UInt8]? {
        while let frame = client.readFrame() {
            if frame.type == 0, frame.streamID == streamID { return frame.payload }
        }
        return nil
    }
}
}
