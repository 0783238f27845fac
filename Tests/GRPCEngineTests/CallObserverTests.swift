import CInterop
import HTTP2Core
import Logging
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import GRPCEngine

/// The engine's call-observer hook: one report per gRPC call, with the
/// method's index, the status sent and the observer's annotation.
@Suite("Call observer (EmbeddedChannel)")
struct CallObserverTests {
    final class Recorder: GRPCCallObserver {
        let calls = Mutex<[GRPCFinishedCall]>([])
        var annotatesRequests: Bool { true }
        func annotate(_ request: GRPCRequest) -> String? { "bytes=\(request.message.count)" }
        func callFinished(_ call: GRPCFinishedCall) { calls.withLock { $0.append(call) } }
        var all: [GRPCFinishedCall] { calls.withLock { $0 } }
    }

    final class Sink: HTTP2SessionDelegate {
        var bodies: [HTTP2OutboundBody] = []
        func http2Session(_ session: HTTP2Session, event: HTTP2SessionEvent) {}
    }

    let channel = EmbeddedChannel()
    let sink = Sink()
    let observer = Recorder()
    let client: HTTP2Session

    init() throws {
        var configuration = GRPCServerConfiguration()
        configuration.eventLoopThreads = 1
        let routes: [String: GRPCRoute] = [
            "/test.Echo/Sync": GRPCRoute(handler: .sync { $0.message }, admission: nil, index: 0),
            "/test.Echo/Fail": GRPCRoute(
                handler: .sync { _ in throw GRPCStatus(.notFound, "no") }, admission: nil, index: 1),
            "/test.Echo/Locked": GRPCRoute(
                handler: .sync { $0.message }, admission: { _ in GRPCStatus(.unauthenticated, "token") }, index: 2),
        ]
        let shared = GRPCServerShared(
            configuration: configuration, routes: routes, observer: observer, logger: Logger(label: "observer-test"))
        let connection = GRPCConnection(shared: shared, channel: channel)
        try channel.pipeline.syncOperations.addHandler(connection)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        client = try HTTP2Session(role: .client, delegate: sink)
        try client.submitSettings([])
    }

    func pump() throws {
        for _ in 0..<100 {
            var moved = false
            var toServer = ByteBuffer()
            try client.drainOutput(into: &toServer)
            if toServer.readableBytes > 0 {
                try channel.writeInbound(toServer)
                moved = true
            }
            channel.embeddedEventLoop.run()
            while let fromServer = try channel.readOutbound(as: ByteBuffer.self) {
                try client.receive(fromServer)
                moved = true
            }
            if !moved { return }
        }
    }

    func call(_ path: String, method: String = "POST", message: [UInt8]? = []) throws {
        let body = message.map { HTTP2OutboundBody($0, prefixed: true) }
        if let body { sink.bodies.append(body) }
        _ = try NGHTTP2Headers.with([
            (":method", method), (":scheme", "http"), (":path", path), (":authority", "localhost"),
            ("content-type", "application/grpc"), ("te", "trailers"),
        ]) { headers, count in
            Result { () throws(HTTP2SessionError) in
                try client.submitRequest(headers: headers, count: count, body: body, streamData: nil)
            }
        }.get()
        try pump()
    }

    @Test func unknownMethodsRefusalsAndNonGRPCRequests() throws {
        try call("/test.Echo/Nope")
        try call("/test.Echo/Locked", message: Array("secret".utf8))
        try call("/", method: "GET", message: nil)
        let calls = observer.all
        // A plain HTTP answer (GET) is not a call; each call is reported once.
        #expect(calls.map(\.method) == [-1, 2])
        #expect(calls.map(\.code) == [.unimplemented, .unauthenticated])
        #expect(calls.map(\.path) == ["/test.Echo/Nope", "/test.Echo/Locked"])
        // Refused from its headers: the body was never read, so never annotated.
        #expect(calls.allSatisfy { $0.annotation == nil })
    }

    @Test func answeredCallsCarryTheirStatusDurationAndAnnotation() throws {
        try call("/test.Echo/Sync", message: Array("hello".utf8))
        try call("/test.Echo/Fail", message: [1, 2])
        let calls = observer.all
        #expect(calls.map(\.method) == [0, 1])
        #expect(calls.map(\.code) == [.ok, .notFound])
        #expect(calls.map(\.annotation) == ["bytes=5", "bytes=2"])
        #expect(calls.allSatisfy { $0.duration >= .zero && $0.duration < .seconds(10) })
    }
}
