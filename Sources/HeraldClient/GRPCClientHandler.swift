import CInterop
import GRPCEngine
import HTTP2Core
import NIOCore
import TLSTransport

/// The client end of one HTTP/2 connection: an nghttp2 client session
/// (HTTP2Core) behind an optional ``OpenSSLHandler``. Lives on its channel's
/// event loop; every entry point runs there.
final class GRPCClientHandler: ChannelInboundHandler, HTTP2SessionDelegate, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Succeeds once the session is up (after the TLS handshake with TLS).
    let ready: EventLoopPromise<Void>
    private let usesTLS: Bool
    private let authority: String
    private var context: ChannelHandlerContext?
    private var session: HTTP2Session?
    private var calls: [Int32: GRPCClientCall] = [:]
    /// The first error the pipeline reported (e.g. a TLS failure).
    private(set) var failure: (any Error)?
    private var isReady = false

    init(ready: EventLoopPromise<Void>, usesTLS: Bool, authority: String) {
        self.ready = ready
        self.usesTLS = usesTLS
        self.authority = authority
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func channelActive(context: ChannelHandlerContext) {
        if !usesTLS { startSession() }
        context.fireChannelActive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is TLSHandshakeCompleted { startSession() }
        context.fireUserInboundEventTriggered(event)
    }

    private func startSession() {
        do {
            let session = try HTTP2Session(role: .client, delegate: self)
            self.session = session
            try session.submitSettings([])
            flush()  // ready once the server's SETTINGS arrive: it speaks HTTP/2
        } catch {
            fail(error)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let session else { return }
        do {
            try session.receive(unwrapInboundIn(data))
        } catch {
            fail(error)
            return
        }
        flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        let reason = failure.map { "\($0)" } ?? "the server closed the connection"
        for (_, call) in calls {
            call.continuation.finish(throwing: GRPCStatus(.unavailable, reason))
        }
        calls.removeAll()
        if !isReady {
            ready.fail(failure ?? GRPCStatus(.unavailable, reason))
            isReady = true  // (the promise is completed)
        }
        context.fireChannelInactive()
    }

    private func fail(_ error: any Error) {
        if failure == nil { failure = error }
        context?.close(promise: nil)
    }

    /// Starts a call: HEADERS and the one framed request message.
    func start(path: String, message: [UInt8], metadata: [(String, String)], timeout: Duration?,
               continuation: AsyncThrowingStream<[UInt8], any Error>.Continuation) {
        guard let session, context != nil else {
            continuation.finish(throwing: GRPCStatus(.unavailable, failure.map { "\($0)" } ?? "the connection is closed"))
            return
        }
        var headers: [(String, String)] = [
            (":method", "POST"), (":scheme", usesTLS ? "https" : "http"), (":path", path), (":authority", authority),
            ("content-type", "application/grpc"), ("te", "trailers"), ("user-agent", "herald-cli"),
        ]
        if let timeout {
            let milliseconds = max(1, timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
            headers.append(("grpc-timeout", "\(min(milliseconds, 99_999_999))m"))
        }
        headers += metadata
        let body = HTTP2OutboundBody()
        body.enqueue(GRPCMessageFramer.frame(message), prefixed: false)
        body.finish(trailers: nil)
        let call = GRPCClientCall(continuation: continuation, body: body)
        do {
            let id = try NGHTTP2Headers.with(headers) { headers, count in
                Result { () throws(HTTP2SessionError) in
                    try session.submitRequest(headers: headers, count: count, body: body, streamData: nil)
                }
            }.get()
            calls[id] = call
            if let timeout, let context {
                // The client's own deadline: the server's grpc-timeout may never come (a peer that is not Herald).
                let marker = ObjectIdentifier(call)
                context.eventLoop.scheduleTask(in: TimeAmount(timeout) + .milliseconds(500)) { [weak self] in
                    guard let self, let call = self.calls[id], ObjectIdentifier(call) == marker, let session = self.session else { return }
                    call.failure = GRPCStatus(.deadlineExceeded, "no answer within \(timeout)")
                    try? session.submitRSTStream(streamID: id, errorCode: NGHTTP2_CANCEL)
                    self.flush()
                }
            }
        } catch {
            continuation.finish(throwing: GRPCStatus(.internalError, "cannot start the call: \(error)"))
            return
        }
        flush()
    }

    /// Closes the connection (GOAWAY is not needed: the client is done).
    func close() {
        context?.close(promise: nil)
    }

    private func flush() {
        guard let session, let context else { return }
        var buffer = context.channel.allocator.buffer(capacity: 0)
        do {
            try session.drainOutput(into: &buffer)
        } catch {
            fail(error)
            return
        }
        if buffer.readableBytes > 0 { context.writeAndFlush(wrapOutboundOut(buffer), promise: nil) }
    }

    // MARK: HTTP2SessionDelegate

    func http2Session(_ session: HTTP2Session, event: HTTP2SessionEvent) {
        switch event {
        case .header(let streamID, _, _, let name, let value):
            guard let call = calls[streamID], call.headers.count < 64 else { return }
            call.headers.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        case .dataChunk(let streamID, _, let bytes):
            guard let call = calls[streamID], call.failure == nil else { return }
            do {
                try call.deframer.append(bytes) { compressed, message in
                    if compressed { throw GRPCStatus(.internalError, "the server sent a compressed message") }
                    call.continuation.yield(message)
                }
            } catch {
                call.failure = (error as? GRPCStatus) ?? GRPCStatus(.internalError, "\(error)")
                try? session.submitRSTStream(streamID: streamID, errorCode: NGHTTP2_CANCEL)
            }
        case .settings:
            if !isReady {
                isReady = true
                ready.succeed(())
            }
        case .streamClosed(let streamID, _, let errorCode):
            guard let call = calls.removeValue(forKey: streamID) else { return }
            let status = call.status(errorCode: errorCode)
            if status.code == .ok {
                call.continuation.finish()
            } else {
                call.continuation.finish(throwing: status)
            }
        default:
            break
        }
    }
}
