import CInterop
import HTTP2Core
import HeraldPrimitives
import NIOCore
import TLSTransport

/// One HTTP/2 connection to FCM (or the OAuth token endpoint): an nghttp2 client session in memory mode
/// behind ``OpenSSLHandler``. Lives on one event loop; every method runs there.
final class FCMConnection: ChannelInboundHandler, HTTP2SessionDelegate, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    enum State { case connecting, ready, draining, closed }

    let id: Int
    let eventLoop: any EventLoop
    private let authority: String
    let clock: any FCMClock
    private let localStreamCap: Int
    private let responseTimeout: Duration
    let pingInterval: Duration
    let idleTimeout: Duration?
    weak var delegate: (any FCMConnectionDelegate)?

    private(set) var state: State = .connecting
    private var context: ChannelHandlerContext?
    var session: HTTP2Session?
    private(set) var streams: [Int32: FCMStreamState] = [:]
    private var outbound: ByteBuffer
    private var insideReceive = false
    private var capacityFreed = false
    private var closeError: FCMTransportError?
    /// The next keep-alive check, on the client's clock.
    var keepAlive: FCMTimer?
    var lastActivity: Timestamp
    var lastStreamActivity: Timestamp
    var pingOutstanding = false

    init(id: Int, eventLoop: any EventLoop, authority: String, clock: any FCMClock,
         localStreamCap: Int, responseTimeout: Duration, pingInterval: Duration, idleTimeout: Duration?) {
        self.id = id
        self.eventLoop = eventLoop
        self.authority = authority
        self.clock = clock
        self.localStreamCap = localStreamCap
        self.responseTimeout = responseTimeout
        self.pingInterval = pingInterval
        self.idleTimeout = idleTimeout
        self.outbound = ByteBufferAllocator().buffer(capacity: 0)
        let now = clock.now()
        self.lastActivity = now
        self.lastStreamActivity = now
    }

    /// Streams open now.
    var inFlight: Int { streams.count }

    /// True when a new stream may start now.
    var canStartStream: Bool { freeStreams > 0 }

    /// How many more streams may start now.
    var freeStreams: Int {
        guard state == .ready, let session else { return 0 }
        let remote = Int(session.remoteSetting(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
        return min(remote, localStreamCap) - streams.count
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        outbound = context.channel.allocator.buffer(capacity: 4096)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is TLSHandshakeCompleted {
            startSession()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let session else { return }
        let buffer = unwrapInboundIn(data)
        lastActivity = clock.now()
        insideReceive = true
        defer { insideReceive = false }
        do {
            try session.receive(buffer)
        } catch {
            insideReceive = false
            close(error: .connectionClosed("HTTP/2 protocol error: \(error.reason)"))
            return
        }
        insideReceive = false
        afterEvents()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        closed(error: closeError ?? .connectionClosed("connection closed"))
    }

    /// The TCP connect itself failed.
    func failedToConnect(_ error: FCMTransportError) {
        if closeError == nil { closeError = error }
        closed(error: closeError)
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed(error: closeError ?? .connectionClosed("connection closed by peer"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let transportError: FCMTransportError
        if let tls = error as? TLSError {
            let retryable = tls.kind == .handshakeFailed || tls.kind == .protocolError
            transportError = state == .connecting ? .connectFailed(tls.description, retryable: retryable)
                : .connectionClosed(tls.description)
        } else {
            transportError = state == .connecting ? .connectFailed("\(error)", retryable: true)
                : .connectionClosed("\(error)")
        }
        if closeError == nil { closeError = transportError }
        context.close(promise: nil)
    }

    // MARK: Session

    private func startSession() {
        do {
            let newSession = try HTTP2Session(role: .client, delegate: self)
            try newSession.submitSettings([
                (NGHTTP2_SETTINGS_ENABLE_PUSH, 0),
                (NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20),
            ])
            try newSession.setLocalWindowSize(1 << 24)
            session = newSession
        } catch {
            close(error: .connectFailed("HTTP/2 session setup: \(error)", retryable: false))
            return
        }
        flush()
        scheduleKeepAlive()
    }

    func http2Session(_ session: HTTP2Session, event: HTTP2SessionEvent) {
        switch event {
        case .header(let streamID, _, _, let name, let value):
            guard let stream = streams[streamID] else { return }
            if bytesEqual(name, ":status") {
                stream.status = Int(String(decoding: value, as: UTF8.self)) ?? 0
            } else if bytesEqual(name, "retry-after"), value.count <= 64 {
                stream.retryAfter = String(decoding: value, as: UTF8.self)
            }
        case .dataChunk(let streamID, _, let bytes):
            guard let stream = streams[streamID] else { return }
            stream.append(bytes)
        case .streamClosed(let streamID, _, let errorCode):
            streamClosed(streamID, errorCode: errorCode)
        case .settings:
            receivedSettings()
        case .goaway:
            receivedGoAway()
        case .pingAck:
            pingOutstanding = false
        case .beginHeaders, .headersComplete, .endStream, .resetReceived, .endStreamSent, .pingReceived:
            break
        }
    }

    /// The server's SETTINGS arrived: streams may start.
    private func receivedSettings() {
        guard state == .connecting else { return }
        state = .ready
        delegate?.connectionReady(self)
    }

    private func receivedGoAway() {
        guard state == .ready || state == .connecting else { return }
        state = .draining
        delegate?.connectionStoppedAccepting(self)
    }

    /// Starts a stream for `pending`. The caller checked ``canStartStream``.
    func start(_ pending: FCMPendingRequest) {
        guard let session, !pending.completed else { return }
        let request = pending.request
        var headers: [(name: String, value: String)] = [
            (":method", "POST"), (":scheme", "https"), (":authority", authority), (":path", request.path),
        ]
        headers.reserveCapacity(request.headers.count + 5)
        headers.append(contentsOf: request.headers)
        headers.append(("content-length", String(request.body.count)))
        let stream = FCMStreamState(pending: pending)
        let submitted = NGHTTP2Headers.with(headers) { nva, count in
            Result { () throws(HTTP2SessionError) in
                try session.submitRequest(headers: nva, count: count, body: stream.payload, streamData: nil)
            }
        }
        let streamID: Int32
        switch submitted {
        case .success(let id): streamID = id
        case .failure(let error):
            pending.fail(.connectionClosed("\(error)"))
            return
        }
        streams[streamID] = stream
        pending.connection = self
        pending.streamID = streamID
        lastStreamActivity = clock.now()
        // A hung endpoint must not hold the request until its TTL: reset the
        // stream after the response timeout; the client retries.
        stream.responseTimer = clock.scheduleTimer(after: responseTimeout, on: eventLoop) { [weak self] in
            self?.cancelStream(streamID, because: .responseTimeout)
        }
        if let deadline = request.deadline {
            pending.deadlineTimer?.cancel()
            pending.deadlineTimer = clock.scheduleTimer(at: deadline, on: eventLoop) { [weak self] in
                self?.cancelStream(streamID, because: .deadlineExceeded)
            }
        }
        if !insideReceive { flushSoon() }
    }

    private var flushScheduled = false

    /// Coalesces writes of many `start` calls made in one event-loop tick.
    private func flushSoon() {
        guard !flushScheduled else { return }
        flushScheduled = true
        eventLoop.execute { [self] in
            flushScheduled = false
            afterEvents()
        }
    }

    /// Resets a stream we no longer want an answer for.
    func cancelStream(_ streamID: Int32, because error: FCMTransportError) {
        guard let session, let stream = streams[streamID] else { return }
        stream.abandonedWith = error
        do {
            try session.submitRSTStream(streamID: streamID, errorCode: NGHTTP2_CANCEL)
        } catch {
            // The stream cannot be ended alone: end the connection (its streams fail and are retried).
            close(error: .connectionClosed("\(error)"))
            return
        }
        afterEvents()
    }

    private func streamClosed(_ id: Int32, errorCode: UInt32) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        stream.responseTimer?.cancel()
        lastStreamActivity = clock.now()
        capacityFreed = true
        if let abandoned = stream.abandonedWith {
            stream.pending.fail(abandoned)
        } else if stream.status != 0 && errorCode == NGHTTP2_NO_ERROR.rawValue {
            stream.pending.succeed(FCMHTTPAnswer(
                status: stream.status, retryAfter: stream.retryAfter, body: stream.body, bodyTruncated: stream.truncated))
        } else if errorCode == NGHTTP2_REFUSED_STREAM.rawValue {
            stream.pending.fail(.streamRefused)
        } else {
            stream.pending.fail(.streamReset(errorCode))
        }
    }

    /// Stop taking streams, finish the open ones, then close (idle).
    func retire() {
        guard state == .ready || state == .connecting else { return }
        state = .draining
        if let session {
            do { try session.submitGoaway(lastStreamID: session.lastProcessedStreamID) } catch {
                close(error: .connectionClosed("\(error)"))
                return
            }
        }
        delegate?.connectionStoppedAccepting(self)
        if !insideReceive { afterEvents() }
    }

    /// After a batch of received frames: write what nghttp2 queued, free capacity, close if done.
    func afterEvents() {
        flush()
        if capacityFreed {
            capacityFreed = false
            if state == .ready {
                delegate?.connectionHasCapacity(self)
                flush()
            }
        }
        if state == .draining && streams.isEmpty {
            close(error: nil)
        }
    }

    func flush() {
        guard let session, let context, state != .closed, !insideReceive else { return }
        insideReceive = true
        do {
            try session.drainOutput(into: &outbound)
        } catch {
            insideReceive = false
            close(error: .connectionClosed("\(error)"))
            return
        }
        insideReceive = false
        if outbound.readableBytes > 0 {
            let chunk = outbound
            outbound = context.channel.allocator.buffer(capacity: 4096)
            context.writeAndFlush(wrapOutboundOut(chunk), promise: nil)
        }
        if session.isFinished && state != .connecting {
            close(error: nil)
        }
    }

    // MARK: Closing

    func close(error: FCMTransportError?) {
        if closeError == nil { closeError = error }
        if let context, state != .closed {
            context.close(promise: nil)
        } else {
            closed(error: error)
        }
    }

    /// The channel is gone: fail what is still open and tell the slot.
    func closed(error: FCMTransportError?) {
        guard state != .closed else { return }
        let wasReady = state != .connecting
        state = .closed
        keepAlive?.cancel()
        keepAlive = nil
        let open = streams
        streams.removeAll()
        let reason = error ?? .connectionClosed("connection closed")
        for (_, stream) in open.sorted(by: { $0.key < $1.key }) {
            stream.responseTimer?.cancel()
            stream.pending.fail(stream.abandonedWith ?? reason)
        }
        delegate?.connectionClosed(self, error: error, wasReady: wasReady)
        context = nil
    }
}
