import CInterop
import HTTP2Core
import HeraldPrimitives
import NIOCore
import TLSTransport

/// One HTTP/2 connection to a provider: an nghttp2 client session in memory
/// mode behind ``OpenSSLHandler``. Lives on one event loop; every entry point
/// asserts it (free in release builds). Its life is an
/// ``HTTP2ConnectionStateMachine``.
final class HTTP2ClientConnection: ChannelInboundHandler, HTTP2SessionDelegate, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let id: Int
    let eventLoop: any EventLoop
    private let authority: String
    let clock: any ProviderClock
    private let localStreamCap: Int
    /// When each open stream must have its answer (one timer for all, ``responseCheck``).
    private var responseDeadlines: HTTP2ResponseDeadlines
    /// Armed for the oldest stream's response timeout while any is open.
    private var responseCheck: ProviderTimer?
    let pingInterval: Duration
    let idleTimeout: Duration?
    weak var slot: HTTP2ClientSlot?

    var machine = HTTP2ConnectionStateMachine()
    private var context: ChannelHandlerContext?
    var session: HTTP2Session?
    private(set) var streams: [Int32: HTTP2StreamState] = [:]
    private var outbound: ByteBuffer
    /// nghttp2 is delivering events (or draining output): do not re-enter it.
    private var insideReceive = false
    /// A stream closed in this batch: the slot may start queued requests.
    private var capacityFreed = false
    /// The first reason the connection is ending with (kept until the channel is gone).
    private var closeError: HTTP2ClientError?
    /// The next keep-alive check, on the pool's clock.
    var keepAlive: ProviderTimer?
    var lastActivity: Timestamp
    var lastStreamActivity: Timestamp
    private var flushScheduled = false
    private let adapter: HTTP2ErasedAdapter

    init(id: Int, eventLoop: any EventLoop, authority: String, adapter: HTTP2ErasedAdapter, clock: any ProviderClock,
         localStreamCap: Int, responseTimeout: Duration, pingInterval: Duration, idleTimeout: Duration?) {
        self.id = id
        self.eventLoop = eventLoop
        self.authority = authority
        self.adapter = adapter
        self.clock = clock
        self.localStreamCap = localStreamCap
        self.responseDeadlines = HTTP2ResponseDeadlines(timeout: responseTimeout)
        self.pingInterval = pingInterval
        self.idleTimeout = idleTimeout
        self.outbound = ByteBufferAllocator().buffer(capacity: 0)
        let now = clock.now()
        self.lastActivity = now
        self.lastStreamActivity = now
    }

    /// Streams open now.
    var inFlight: Int { streams.count }

    /// How many more streams may start now.
    var freeStreams: Int {
        eventLoop.assertInEventLoop()
        guard machine.isReady, let session else { return 0 }
        let remote = Int(session.remoteSetting(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
        return min(remote, localStreamCap) - streams.count
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        eventLoop.assertInEventLoop()
        self.context = context
        outbound = context.channel.allocator.buffer(capacity: 4096)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        eventLoop.assertInEventLoop()
        if event is TLSHandshakeCompleted {
            startSession()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        eventLoop.assertInEventLoop()
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
        eventLoop.assertInEventLoop()
        closed(error: closeError ?? .connectionClosed("connection closed"))
    }

    /// The TCP connect itself failed.
    func failedToConnect(_ error: HTTP2ClientError) {
        eventLoop.assertInEventLoop()
        if closeError == nil { closeError = error }
        closed(error: closeError)
    }

    func channelInactive(context: ChannelHandlerContext) {
        eventLoop.assertInEventLoop()
        closed(error: closeError ?? .connectionClosed("connection closed by peer"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        eventLoop.assertInEventLoop()
        let connecting = machine.isConnecting
        let transportError: HTTP2ClientError
        if let tls = error as? TLSError {
            let retryable = tls.kind == .handshakeFailed || tls.kind == .protocolError
            transportError = connecting ? .connectFailed(tls.description, retryable: retryable) : .connectionClosed(tls.description)
        } else {
            transportError = connecting ? .connectFailed("\(error)", retryable: true) : .connectionClosed("\(error)")
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
        eventLoop.assertInEventLoop()
        switch event {
        case .header(let streamID, _, _, let name, let value):
            guard let stream = streams[streamID] else { return }
            if bytesEqual(name, ":status") {
                stream.status = Int(String(decoding: value, as: UTF8.self)) ?? 0
            } else if bytesEqual(name, adapter.keptHeader), value.count <= adapter.keptHeaderMaximumBytes {
                stream.keptHeader = String(decoding: value, as: UTF8.self)
            }
        case .dataChunk(let streamID, _, let bytes):
            streams[streamID]?.append(bytes)
        case .streamClosed(let streamID, _, let errorCode):
            streamClosed(streamID, errorCode: errorCode)
        case .settings:
            if machine.settingsReceived() { slot?.connectionReady(self) }
        case .goaway:
            if machine.stopAccepting() { slot?.connectionStoppedAccepting(self) }
        case .pingAck:
            machine.pingAcknowledged()
        case .beginHeaders, .headersComplete, .endStream, .resetReceived, .endStreamSent, .pingReceived:
            break
        }
    }

    /// Starts a stream for `pending`. The caller checked ``freeStreams``.
    func start(_ pending: HTTP2PendingRequest) {
        eventLoop.assertInEventLoop()
        guard let session, !pending.completed else { return }
        let credential: HTTP2StreamCredential?
        do {
            credential = try adapter.credential(clock.now())
        } catch {
            pending.fail(error)
            return
        }
        let request = pending.request
        var headers: [(name: String, value: String)] = [
            (":method", "POST"), (":scheme", "https"), (":authority", authority), (":path", request.path),
        ]
        headers.reserveCapacity(request.headers.count + 6)
        if let credential { headers.append(credential.header) }
        headers.append(contentsOf: request.headers)
        headers.append(("content-length", String(request.body.count)))
        let stream = HTTP2StreamState(pending: pending, credential: credential?.value)
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
        pending.written(on: self, streamID: streamID)
        let now = clock.now()
        lastStreamActivity = now
        // A hung endpoint must not hold the request until its deadline: reset
        // the stream after the response timeout; the client retries. (The
        // request's deadline timer, armed by the slot, resets it too.)
        responseDeadlines.started(streamID, at: now)
        armResponseCheck(now: now)
        if !insideReceive { flushSoon() }
    }

    /// Arms the one response-timeout timer for the oldest open stream, unless armed.
    private func armResponseCheck(now: Timestamp) {
        guard responseCheck == nil, let delay = responseDeadlines.nextCheck(now: now) else { return }
        responseCheck = clock.scheduleTimer(after: delay, on: eventLoop) { [weak self] in
            self?.checkResponseTimeouts()
        }
    }

    /// Resets every stream whose response timeout passed, then re-arms for the next.
    private func checkResponseTimeouts() {
        eventLoop.assertInEventLoop()
        responseCheck = nil
        guard !machine.isClosed else { return }
        let now = clock.now()
        for streamID in responseDeadlines.expired(now: now, isOpen: { streams[$0] != nil }) {
            cancelStream(streamID, because: .responseTimeout)
        }
        armResponseCheck(now: now)
    }

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
    func cancelStream(_ streamID: Int32, because error: HTTP2ClientError) {
        eventLoop.assertInEventLoop()
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
        if streams.isEmpty {
            // Nothing waits for an answer: no timer stays armed for nothing.
            responseCheck?.cancel()
            responseCheck = nil
            responseDeadlines.removeAll()
        } else {
            responseDeadlines.compact(open: streams.count) { streams[$0] != nil }
        }
        lastStreamActivity = clock.now()
        capacityFreed = true
        if let abandoned = stream.abandonedWith {
            stream.pending.fail(abandoned)
        } else if stream.status != 0 && errorCode == NGHTTP2_NO_ERROR.rawValue {
            // The caller's completion reads the answer with the adapter (e.g.
            // APNs' ExpiredProviderToken expires the token) and says whether
            // it retires this connection.
            if stream.pending.succeed(stream.answer, credential: stream.credential) { retire() }
        } else if errorCode == NGHTTP2_REFUSED_STREAM.rawValue {
            stream.pending.fail(.streamRefused)
        } else {
            stream.pending.fail(.streamReset(errorCode))
        }
    }

    /// Stop taking streams, finish the open ones, then close.
    func retire() {
        eventLoop.assertInEventLoop()
        guard machine.stopAccepting() else { return }
        if let session {
            do { try session.submitGoaway(lastStreamID: session.lastProcessedStreamID) } catch {
                close(error: .connectionClosed("\(error)"))
                return
            }
        }
        slot?.connectionStoppedAccepting(self)
        if !insideReceive { afterEvents() }
    }

    /// After a batch of received frames: write what nghttp2 queued, free capacity, close if done.
    func afterEvents() {
        eventLoop.assertInEventLoop()
        flush()
        if capacityFreed {
            capacityFreed = false
            if machine.isReady {
                slot?.connectionHasCapacity(self)
                flush()
            }
        }
        if case .draining = machine.state, streams.isEmpty {
            close(error: nil)
        }
    }

    func flush() {
        eventLoop.assertInEventLoop()
        guard let session, let context, !machine.isClosed, !insideReceive else { return }
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
        if session.isFinished && !machine.isConnecting {
            close(error: nil)
        }
    }

    // MARK: Closing

    func close(error: HTTP2ClientError?) {
        eventLoop.assertInEventLoop()
        if closeError == nil { closeError = error }
        if let context, !machine.isClosed {
            context.close(promise: nil)
        } else {
            closed(error: error)
        }
    }

    /// The channel is gone: fail what is still open and tell the slot.
    func closed(error: HTTP2ClientError?) {
        eventLoop.assertInEventLoop()
        guard let wasReady = machine.closed() else { return }
        keepAlive?.cancel()
        keepAlive = nil
        responseCheck?.cancel()
        responseCheck = nil
        responseDeadlines.removeAll()
        let open = streams
        streams.removeAll()
        let reason = error ?? .connectionClosed("connection closed")
        for (_, stream) in open.sorted(by: { $0.key < $1.key }) {
            stream.pending.fail(stream.abandonedWith ?? reason)
        }
        slot?.connectionClosed(self, error: error, wasReady: wasReady)
        context = nil
    }
}
