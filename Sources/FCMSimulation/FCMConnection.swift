import CInterop
import HTTP2Core
import NIOCore
import TLSTransport

/// One request being received / answered.
final class FCMStream {
    let id: Int32
    var request = CollectedRequest()
    var headerBytes = 0
    var headerCount = 0
    /// The response body as nghttp2's DATA source (kept alive until the stream closes).
    var response: HTTP2OutboundBody?
    /// Resets the stream if its request is not whole by `requestTimeout`.
    var receiveTimer: Scheduled<Void>?

    init(id: Int32) { self.id = id }
}

/// The server side of one simulator connection: an nghttp2 server session in
/// memory mode behind ``OpenSSLHandler``. Runs on its channel's event loop.
final class FCMConnection: ChannelInboundHandler, HTTP2SessionDelegate, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let id: Int
    private let state: FCMSimulatorState
    private var context: ChannelHandlerContext?
    private var session: HTTP2Session?
    private var streams: [Int32: FCMStream] = [:]
    private var outbound = ByteBufferAllocator().buffer(capacity: 0)
    private var insideSession = false
    /// The highest stream whose request was handed to the router.
    private var highestProcessed: Int32 = 0
    private var goAwayLastStreamID: Int32?
    private var closing = false
    private var lastActivity = NIODeadline.now()
    private var idleTimer: Scheduled<Void>?

    init(id: Int, state: FCMSimulatorState) {
        self.id = id
        self.state = state
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        outbound = context.channel.allocator.buffer(capacity: 4096)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        idleTimer?.cancel()
        for stream in streams.values { stream.receiveTimer?.cancel() }
        self.context = nil
        streams.removeAll()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is TLSHandshakeCompleted { startSession() }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)  // TLS garbage, handshake failures: just drop the connection
    }

    private func startSession() {
        do {
            var options = HTTP2SessionOptions()
            options.streamResetRateLimit = (burst: 1000, rate: 33)
            options.maxOutboundAck = 1000
            options.maxSettings = 32
            options.maxContinuations = 8
            let newSession = try HTTP2Session(role: .server, delegate: self, options: options)
            try newSession.submitSettings([
                (NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, UInt32(state.configuration.maxConcurrentStreams)),
                (NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20),
                (NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, UInt32(FCMSimulatorLimits.maxHeaderBytes)),
            ])
            try newSession.setLocalWindowSize(1 << 24)
            session = newSession
        } catch {
            context?.close(promise: nil)
            return
        }
        scheduleIdleCheck(after: state.configuration.idleTimeout)
        flush()
    }

    func http2Session(_ session: HTTP2Session, event: HTTP2SessionEvent) {
        switch event {
        case .beginHeaders(let streamID, let category):
            if category == .request { beginStream(streamID) }
        case .header(let streamID, _, let category, let name, let value):
            guard category == .request, let stream = streams[streamID] else { return }
            addHeader(stream, name: name, value: value)
        case .dataChunk(let streamID, _, let bytes):
            guard let stream = streams[streamID] else { return }
            addBody(stream, bytes)
        case .endStream(let streamID, _):
            guard let stream = streams[streamID] else { return }
            requestComplete(stream)
        case .streamClosed(let streamID, _, _):
            streams.removeValue(forKey: streamID)?.receiveTimer?.cancel()
        case .headersComplete, .resetReceived, .settings, .pingReceived, .pingAck, .goaway, .endStreamSent:
            break
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let session, !closing else { return }
        lastActivity = .now()
        let buffer = unwrapInboundIn(data)
        insideSession = true
        let failure: HTTP2SessionError?
        do { try session.receive(buffer); failure = nil } catch { failure = error }
        insideSession = false
        flush()
        // nghttp2 already queued GOAWAY(PROTOCOL_ERROR) where it could: send it and drop the connection.
        if failure != nil { closeAfterFlush() }
    }

    // MARK: Streams

    private func beginStream(_ streamID: Int32) {
        let stream = FCMStream(id: streamID)
        streams[streamID] = stream
        stream.receiveTimer = context?.eventLoop.scheduleTask(in: TimeAmount(state.configuration.requestTimeout)) { [self] in
            // A request still arriving (a slow or stalled peer): give up on it.
            guard let session, streams[streamID] != nil, !session.isRemoteClosed(streamID) else { return }
            try? session.submitRSTStream(streamID: streamID, errorCode: NGHTTP2_CANCEL)
            flush()
        }
    }

    private func addHeader(_ stream: FCMStream, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        stream.headerBytes += name.count + value.count
        stream.headerCount += 1
        if stream.headerBytes > FCMSimulatorLimits.maxHeaderBytes || stream.headerCount > FCMSimulatorLimits.maxHeaderCount {
            stream.request.headersTooLarge = true
            return
        }
        if bytesEqual(name, ":method") {
            stream.request.method = String(decoding: value, as: UTF8.self)
        } else if bytesEqual(name, ":path") {
            stream.request.path = String(decoding: value, as: UTF8.self)
        } else if bytesEqual(name, "authorization") {
            stream.request.authorization = String(decoding: value, as: UTF8.self)
        }
    }

    private func addBody(_ stream: FCMStream, _ bytes: UnsafeRawBufferPointer) {
        let limit = stream.request.path.hasPrefix(FCMSimulator.tokenPath)
            ? FCMSimulatorLimits.maxTokenBody : FCMSimulatorLimits.maxSendBody
        if stream.request.bodyTooLarge || stream.request.body.count + bytes.count > limit {
            stream.request.bodyTooLarge = true
            stream.request.body = []
        } else {
            stream.request.body.append(contentsOf: bytes)
        }
    }

    /// The whole request arrived: route it and act.
    private func requestComplete(_ stream: FCMStream) {
        guard let session else { return }
        stream.receiveTimer?.cancel()
        stream.receiveTimer = nil
        if let last = goAwayLastStreamID, stream.id > last { return }  // nghttp2 closes these itself
        let action = RequestRouter.route(stream.request, state: state)
        if action != .refuseWithGoaway { highestProcessed = max(highestProcessed, stream.id) }
        switch action {
        case .drop:
            closing = true
            context?.close(promise: nil)
        case .refuseWithGoaway:
            // Streams before this one stay answerable; a later one already
            // processed (streams may complete out of order) is named too.
            let last = min(goAwayLastStreamID ?? .max, max(stream.id - 2, highestProcessed))
            goAwayLastStreamID = max(last, 0)
            do {
                try session.submitRSTStream(streamID: stream.id, errorCode: NGHTTP2_REFUSED_STREAM)
                try session.submitGoaway(lastStreamID: max(last, 0))
            } catch {
                closeAfterFlush()
            }
        case .reply(let reply, let delay):
            state.countStatus(reply.status)
            stream.response = reply.body.isEmpty ? nil : HTTP2OutboundBody(reply.body)
            if delay > .zero, let context {
                let streamID = stream.id
                context.eventLoop.scheduleTask(in: TimeAmount(delay)) { [self] in
                    guard let stream = streams[streamID] else { return }
                    submit(reply, on: stream)
                    flush()
                }
            } else {
                submit(reply, on: stream)
            }
        }
    }

    private func submit(_ reply: FCMReply, on stream: FCMStream) {
        guard let session else { return }
        var headers: [(name: String, value: String)] = [(":status", String(reply.status))]
        headers += reply.headers
        if let response = stream.response { headers.append(("content-length", String(response.pendingBytes))) }
        let submitted = NGHTTP2Headers.with(headers) { nva, count in
            Result { () throws(HTTP2SessionError) in
                try session.submitResponse(streamID: stream.id, headers: nva, count: count, body: stream.response)
            }
        }
        if case .failure = submitted { closeAfterFlush() }
    }

    // MARK: Idle

    private func scheduleIdleCheck(after delay: Duration) {
        guard let context else { return }
        idleTimer = context.eventLoop.scheduleTask(in: TimeAmount(delay)) { [self] in
            let timeout = TimeAmount(state.configuration.idleTimeout)
            let idleFor = NIODeadline.now() - lastActivity
            guard !closing, self.context != nil else { return }
            if idleFor >= timeout && streams.isEmpty {
                if let session { try? session.submitGoaway(lastStreamID: highestProcessed) }
                flush()
                closeAfterFlush()
            } else {
                scheduleIdleCheck(after: .nanoseconds(max(timeout - idleFor, .milliseconds(100)).nanoseconds))
            }
        }
    }

    // MARK: Output

    private func flush() {
        guard let session, let context, !insideSession, !closing else { return }
        insideSession = true
        let ok = (try? session.drainOutput(into: &outbound)) != nil
        insideSession = false
        if outbound.readableBytes > 0 {
            let chunk = outbound
            outbound = context.channel.allocator.buffer(capacity: 4096)
            context.writeAndFlush(wrapOutboundOut(chunk), promise: nil)
        }
        let goAwayDone = goAwayLastStreamID.map { last in !streams.keys.contains { $0 <= last } } ?? false
        if !ok || goAwayDone || session.isFinished {
            closeAfterFlush()
        }
    }

    private func closeAfterFlush() {
        guard let context, !closing else { return }
        closing = true
        if let session, (try? session.drainOutput(into: &outbound)) != nil, outbound.readableBytes > 0 {
            context.write(wrapOutboundOut(outbound), promise: nil)
        }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(capacity: 0))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }
}
