import CInterop
import HTTP2Core
import NIOCore
import NIOPosix
import TLSTransport

/// One HTTP/2 answer.
struct H2Response: Sendable {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// Why a request got no answer.
enum H2TestError: Error, Equatable {
    case reset(UInt32)
    case connectionClosed
    case handshake(String)
}

/// A minimal HTTP/2-over-TLS client for the tests, on HTTP2Core and
/// TLSTransport: independent of the FCM client, one connection, requests
/// answered through continuations.
final class H2TestClient: Sendable {
    let channel: any Channel
    private let handler: H2TestHandler

    private init(channel: any Channel, handler: H2TestHandler) {
        self.channel = channel
        self.handler = handler
    }

    static func connect(port: Int, trusting certificatePEM: String, serverName: String = "127.0.0.1") async throws -> H2TestClient {
        let tls = try TLSContext.client(trustedCAPEM: certificatePEM)
        let ready = MultiThreadedEventLoopGroup.singleton.next().makePromise(of: Void.self)
        let handler = H2TestHandler(ready: ready)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers([
                        try OpenSSLHandler(context: tls, serverName: serverName), handler,
                    ])
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        try await ready.futureResult.get()
        return H2TestClient(channel: channel, handler: handler)
    }

    /// Sends one request; returns the answer or throws ``H2TestError``.
    func request(
        _ method: String = "POST", path: String, headers: [(name: String, value: String)] = [], body: [UInt8] = []
    ) async throws -> H2Response {
        let all: [(name: String, value: String)] = [
            (":method", method), (":scheme", "https"), (":authority", "127.0.0.1"), (":path", path),
        ] + headers
        return try await withCheckedThrowingContinuation { continuation in
            channel.eventLoop.execute { [handler] in
                handler.submit(headers: all, body: body, continuation: continuation)
            }
        }
    }

    /// A request whose body never ends (the stream stays open from this side).
    func requestNeverEnding(path: String) async throws -> H2Response {
        let all: [(name: String, value: String)] = [
            (":method", "POST"), (":scheme", "https"), (":authority", "127.0.0.1"), (":path", path),
        ]
        return try await withCheckedThrowingContinuation { continuation in
            channel.eventLoop.execute { [handler] in
                handler.submit(headers: all, body: [], open: true, continuation: continuation)
            }
        }
    }

    /// POST `/v1/projects/P/messages:send` with a bearer token.
    func send(project: String, accessToken: String?, body: String) async throws -> H2Response {
        var headers: [(name: String, value: String)] = [("content-type", "application/json")]
        if let accessToken { headers.append(("authorization", "Bearer \(accessToken)")) }
        return try await request(path: "/v1/projects/\(project)/messages:send", headers: headers, body: Array(body.utf8))
    }

    /// The server's advertised SETTINGS_MAX_CONCURRENT_STREAMS.
    func remoteMaxConcurrentStreams() async throws -> UInt32 {
        try await channel.eventLoop.submit { [handler] in handler.remoteMaxStreams() }.get()
    }

    /// The last stream ID of a GOAWAY received, if one arrived.
    func goAwayLastStreamID() async throws -> Int32? {
        try await channel.eventLoop.submit { [handler] in handler.goAwayLastStreamID }.get()
    }

    func close() async {
        try? await channel.close()
    }
}

/// The client session; loop-confined.
final class H2TestHandler: ChannelInboundHandler, HTTP2SessionDelegate, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private final class Pending {
        var status = 0
        var headers: [(name: String, value: String)] = []
        var body: [UInt8] = []
        var request: HTTP2OutboundBody?
        let continuation: CheckedContinuation<H2Response, any Error>
        init(continuation: CheckedContinuation<H2Response, any Error>) { self.continuation = continuation }
    }

    private let readyPromise: EventLoopPromise<Void>
    private var readyDone = false
    private var context: ChannelHandlerContext?
    private var session: HTTP2Session?
    private var pending: [Int32: Pending] = [:]
    private var closed = false
    private(set) var goAwayLastStreamID: Int32?

    init(ready: EventLoopPromise<Void>) { readyPromise = ready }

    private func ready(_ result: Result<Void, any Error>) {
        guard !readyDone else { return }
        readyDone = true
        readyPromise.completeWith(result)
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is TLSHandshakeCompleted {
            do {
                let session = try HTTP2Session(role: .client, delegate: self)
                try session.submitSettings([(NGHTTP2_SETTINGS_ENABLE_PUSH, 0)])
                self.session = session
                flush()
                ready(.success(()))
            } catch {
                ready(.failure(H2TestError.handshake("\(error)")))
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        ready(.failure(H2TestError.handshake("\(error)")))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed = true
        ready(.failure(H2TestError.connectionClosed))
        let waiting = pending
        pending = [:]
        for (_, request) in waiting { request.continuation.resume(throwing: H2TestError.connectionClosed) }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let session else { return }
        do { try session.receive(unwrapInboundIn(data)) } catch { context.close(promise: nil) }
        flush()
    }

    func submit(
        headers: [(name: String, value: String)], body: [UInt8], open: Bool = false,
        continuation: CheckedContinuation<H2Response, any Error>
    ) {
        guard let session, !closed else { return continuation.resume(throwing: H2TestError.connectionClosed) }
        let request = Pending(continuation: continuation)
        if open {
            request.request = HTTP2OutboundBody()  // never finished: nghttp2 waits for more
        } else {
            request.request = body.isEmpty ? nil : HTTP2OutboundBody(body)
        }
        let submitted = NGHTTP2Headers.with(headers) { nva, count in
            Result { () throws(HTTP2SessionError) in
                try session.submitRequest(headers: nva, count: count, body: request.request, streamData: nil)
            }
        }
        switch submitted {
        case .success(let streamID): pending[streamID] = request
        case .failure(let error): return continuation.resume(throwing: error)
        }
        flush()
    }

    func remoteMaxStreams() -> UInt32 { session?.remoteSetting(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS) ?? 0 }

    func http2Session(_ session: HTTP2Session, event: HTTP2SessionEvent) {
        switch event {
        case .header(let streamID, _, _, let name, let value):
            guard let request = pending[streamID] else { return }
            let name = String(decoding: name, as: UTF8.self)
            let value = String(decoding: value, as: UTF8.self)
            if name == ":status" { request.status = Int(value) ?? 0 } else { request.headers.append((name, value)) }
        case .dataChunk(let streamID, _, let bytes):
            pending[streamID]?.body.append(contentsOf: bytes)
        case .streamClosed(let streamID, _, let errorCode):
            guard let request = pending.removeValue(forKey: streamID) else { return }
            if request.status != 0 && errorCode == 0 {
                request.continuation.resume(returning: H2Response(status: request.status, headers: request.headers, body: request.body))
            } else {
                request.continuation.resume(throwing: H2TestError.reset(errorCode))
            }
        case .goaway(let lastStreamID, _):
            goAwayLastStreamID = lastStreamID
        default:
            break
        }
    }

    private func flush() {
        guard let session, let context else { return }
        var buffer = context.channel.allocator.buffer(capacity: 1024)
        if (try? session.drainOutput(into: &buffer)) == nil { context.close(promise: nil) }
        if buffer.readableBytes > 0 { context.writeAndFlush(wrapOutboundOut(buffer), promise: nil) }
    }
}
