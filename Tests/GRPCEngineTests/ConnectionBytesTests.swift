import CInterop
import HTTP2Core
import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import GRPCEngine

/// The gRPC connection handler driven by bytes in memory: an nghttp2 client
/// session (`HTTP2Session`, client role) talks to it through an EmbeddedChannel.
@Suite("Connection driven by bytes in memory (EmbeddedChannel)")
struct ConnectionBytesTests {
    /// What the client session saw.
    final class ClientRecorder: HTTP2SessionDelegate {
        var headers: [Int32: [(String, String)]] = [:]
        var data: [Int32: [UInt8]] = [:]
        var closed: [Int32: UInt32] = [:]
        var goaways: [Int32] = []
        /// Everything the server wrote (a client session that saw GOAWAY with no
        /// open streams stops reading, so later frames are checked here).
        var serverBytes: [UInt8] = []
        /// Request bodies, alive until the test ends (nghttp2 reads them while pumping).
        var bodies: [HTTP2OutboundBody] = []

        func http2Session(_ session: HTTP2Session, event: HTTP2SessionEvent) {
            switch event {
            case .header(let streamID, _, _, let name, let value):
                headers[streamID, default: []].append(
                    (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
            case .dataChunk(let streamID, _, let bytes):
                data[streamID, default: []].append(contentsOf: bytes)
            case .streamClosed(let streamID, _, let errorCode):
                closed[streamID] = errorCode
            case .goaway(let lastStreamID, _):
                goaways.append(lastStreamID)
            default:
                break
            }
        }

        func header(_ name: String, on streamID: Int32) -> String? {
            headers[streamID]?.last { $0.0 == name }?.1
        }
    }

    let channel = EmbeddedChannel()
    let recorder = ClientRecorder()
    let client: HTTP2Session
    let connection: GRPCConnection

    init() throws {
        var configuration = GRPCServerConfiguration()
        configuration.eventLoopThreads = 1
        let routes: [String: GRPCRoute] = [
            "/test.Echo/Sync": GRPCRoute(handler: .sync { $0.message }, admission: nil),
        ]
        let shared = GRPCServerShared(configuration: configuration, routes: routes, logger: Logger(label: "bytes-test"))
        connection = GRPCConnection(shared: shared, channel: channel)
        try channel.pipeline.syncOperations.addHandler(connection)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        client = try HTTP2Session(role: .client, delegate: recorder)
        try client.submitSettings([])
    }

    /// Moves bytes both ways until neither side has anything to say.
    func pump() throws {
        try pumpBytes(client: client, channel: channel) { recorder.serverBytes += Array($0.readableBytesView) }
    }

    func request(path: String, method: String = "POST", contentType: String = "application/grpc",
                 message: [UInt8]?) throws -> Int32 {
        let body = message.map { HTTP2OutboundBody($0, prefixed: true) }
        if let body { recorder.bodies.append(body) }
        return try NGHTTP2Headers.with([
            (":method", method), (":scheme", "http"), (":path", path), (":authority", "localhost"),
            ("content-type", contentType), ("te", "trailers"),
        ]) { headers, count in
            Result { () throws(HTTP2SessionError) in
                try client.submitRequest(headers: headers, count: count, body: body, streamData: nil)
            }
        }.get()
    }

    @Test func unaryCallAnswersMessageAndOKTrailers() throws {
        let stream = try request(path: "/test.Echo/Sync", message: Array("in memory".utf8))
        try pump()
        #expect(recorder.header(":status", on: stream) == "200")
        #expect(recorder.data[stream] == GRPCMessageFramer.frame(Array("in memory".utf8)))
        #expect(recorder.header("grpc-status", on: stream) == "0")
        #expect(recorder.closed[stream] == 0)
    }

    @Test func unknownMethodIsTrailersOnlyUnimplemented() throws {
        let stream = try request(path: "/test.Echo/Nope", message: [])
        try pump()
        #expect(recorder.header("grpc-status", on: stream) == "12")
        #expect(recorder.data[stream] == nil)
    }

    @Test func getIsAnswered405WithAHumanReadableBody() throws {
        let stream = try request(path: "/", method: "GET", message: nil)
        try pump()
        #expect(recorder.header(":status", on: stream) == "405")
        #expect(recorder.header("content-type", on: stream) == "text/plain; charset=utf-8")
        let text = String(decoding: recorder.data[stream] ?? [], as: UTF8.self)
        #expect(text.contains("This is a gRPC server (Herald)"))
    }

    @Test func nonGRPCContentTypeIsAnswered415WithABody() throws {
        let stream = try request(path: "/test.Echo/Sync", contentType: "application/json", message: [1])
        try pump()
        #expect(recorder.header(":status", on: stream) == "415")
        #expect(String(decoding: recorder.data[stream] ?? [], as: UTF8.self).contains("application/grpc"))
    }

    @Test func drainSendsNoticeThenFinalGoawayAfterThePingAck() throws {
        let stream = try request(path: "/test.Echo/Sync", message: [7])
        try pump()
        connection.beginShutdown()
        try pump()  // the client session acks the PING on its own
        #expect(goawayLastStreamIDs(recorder.serverBytes) == [Int32.max, stream])
        #expect(connection.state.state == .closed, "idle after the final GOAWAY: closed")
    }

    @Test func idleDrainWaitsForThePingAckBeforeClosing() throws {
        try pump()
        connection.beginShutdown()
        while let output = try channel.readOutbound(as: ByteBuffer.self) {
            recorder.serverBytes += Array(output.readableBytesView)
        }
        channel.embeddedEventLoop.run()
        #expect(channel.isActive, "a request sent before the peer saw the notice may still arrive")
        #expect(goawayLastStreamIDs(recorder.serverBytes) == [Int32.max])
    }

    /// Last-stream IDs of the GOAWAY frames in raw server output.
    func goawayLastStreamIDs(_ bytes: [UInt8]) -> [Int32] {
        var ids: [Int32] = []
        var offset = 0  // a server sends no preface: frames from the first byte
        while offset + 9 <= bytes.count {
            let length = Int(bytes[offset]) << 16 | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2])
            if bytes[offset + 3] == 7, offset + 13 <= bytes.count {
                let id = bytes[(offset + 9)..<(offset + 13)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } & 0x7FFF_FFFF
                ids.append(Int32(id))
            }
            offset += 9 + length
        }
        return ids
    }
}
