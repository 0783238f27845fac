import CInterop
import HTTP2Core
import Logging
import NIOCore
import NIOEmbedded

@testable import GRPCEngine

/// A server connection on an EmbeddedChannel with three unary methods
/// (`/test.Echo/Sync` 0, `/test.Echo/Fail` 1 → NOT_FOUND, `/test.Echo/Locked`
/// 2 → UNAUTHENTICATED at admission) and `observer`, driven by an in-memory
/// nghttp2 client.
struct ObservedConnection {
    final class Sink: HTTP2SessionDelegate {
        var bodies: [HTTP2OutboundBody] = []
        func http2Session(_ session: HTTP2Session, event: HTTP2SessionEvent) {}
    }

    let channel = EmbeddedChannel()
    let sink = Sink()
    let client: HTTP2Session

    init(observer: any GRPCCallObserver) throws {
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

    /// Moves bytes both ways until neither side has any.
    func pump() throws {
        try pumpBytes(client: client, channel: channel)
    }

    /// One call (`message` nil: no body), pumped until answered.
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
}

/// Moves bytes between an in-memory nghttp2 `client` and the server on
/// `channel` until neither side has any; `serverWrote` sees each buffer the
/// server wrote before the client reads it.
func pumpBytes(client: HTTP2Session, channel: EmbeddedChannel, serverWrote: (ByteBuffer) -> Void = { _ in }) throws {
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
            serverWrote(fromServer)
            try client.receive(fromServer)
            moved = true
        }
        if !moved { return }
    }
}
