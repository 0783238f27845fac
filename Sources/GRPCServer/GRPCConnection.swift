import CInterop
#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore

/// One HTTP/2 connection: owns an nghttp2 server session in memory mode.
/// Everything runs on the channel's event loop; `@unchecked Sendable` lets the
/// server and async handler Tasks hop back to it with `eventLoop.execute`.
final class GRPCConnection: ChannelDuplexHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let shared: GRPCServerShared
    let channel: Channel
    let eventLoop: EventLoop
    let counters = GRPCConnectionCounters()
    var logger: Logger

    private var session: OpaquePointer?
    private var context: ChannelHandlerContext?
    private var streams: [Int32: GRPCStream] = [:]
    private var bufferedRequestBytes = 0
    private var pendingRead = false
    private var spareOutput: ByteBuffer?
    private var flushScheduled = false
    private var isClosing = false
    private var shutdownPingOutstanding = false
    private(set) var remoteAddress: String?

    // Handshake, idle, keepalive and request-receive timeouts: one timer,
    // rescheduled only when an event needs it earlier than planned.
    private var liveness: GRPCConnectionLiveness
    private var livenessTimer: Scheduled<Void>?
    private var livenessTimerAt: NIODeadline = .distantFuture

    // A one-entry route cache: clients hammer the same method on a connection.
    private var cachedPathBytes: [UInt8] = []
    private var cachedPath: String = ""
    private var cachedRoute: GRPCRoute?

    init(shared: GRPCServerShared, channel: Channel) {
        self.shared = shared
        self.channel = channel
        self.eventLoop = channel.eventLoop
        self.logger = shared.logger
        let configuration = shared.configuration
        self.liveness = GRPCConnectionLiveness(
            limits: .init(
                handshake: TimeAmount(configuration.handshakeTimeout),
                idle: TimeAmount(configuration.idleTimeout),
                keepaliveInterval: TimeAmount(configuration.keepaliveInterval),
                keepaliveTimeout: TimeAmount(configuration.keepaliveTimeout),
                requestReceive: TimeAmount(configuration.requestReceiveTimeout)),
            now: .now())
        if let address = channel.remoteAddress, let ip = address.ipAddress, let port = address.port {
            remoteAddress = address.protocol == .inet6 ? "[\(ip)]:\(port)" : "\(ip):\(port)"
            logger[metadataKey: "peer"] = "\(remoteAddress!)"
        }
    }

    // MARK: - Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        var session: OpaquePointer?
        let rv = nghttp2_session_server_new2(
            &session, GRPCConnection.callbacks, Unmanaged.passUnretained(self).toOpaque(), GRPCConnection.options)
        guard rv == 0, let session else {
            logger.error("nghttp2 session creation failed", metadata: ["error": "\(rv)"])
            context.close(promise: nil)
            return
        }
        self.session = session
        let configuration = shared.configuration
        let settingsSent = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), [
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                value: UInt32(clamping: configuration.maxConcurrentStreams)),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                value: UInt32(clamping: configuration.maxHeaderListBytes)),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue),
                value: UInt32(GRPCConnection.streamWindow)),
        ], 3)
        let windowSet = nghttp2_session_set_local_window_size(
            session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, GRPCConnection.connectionWindow)
        guard settingsSent == 0, windowSet == 0 else {
            logger.error("nghttp2 session setup failed", metadata: ["settings": "\(settingsSent)", "window": "\(windowSet)"])
            context.close(promise: nil)
            return
        }
        shared.connectionOpened(self)
        livenessTick()
        logger.debug("connection accepted")
        if context.channel.isActive { flushOutput() }
    }

    func channelActive(context: ChannelHandlerContext) {
        flushOutput()
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let session, !isClosing else { return }
        liveness.peerSentBytes()
        let buffer = unwrapInboundIn(data)
        let rv = buffer.withUnsafeReadableBytes { bytes in
            nghttp2_session_mem_recv(session, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        }
        if rv < 0 {
            let reason = String(cString: nghttp2_strerror(Int32(rv)))
            logger.info("closing connection after protocol error", metadata: ["error": "\(reason)"])
            if Int32(rv) != NGHTTP2_ERR_BAD_CLIENT_MAGIC.rawValue {
                nghttp2_session_terminate_session(session, UInt32(NGHTTP2_PROTOCOL_ERROR.rawValue))
            }
            closeAfterFlush()
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushOutput()
    }

    func channelInactive(context: ChannelHandlerContext) {
        teardown()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        teardown()
        self.context = nil
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        logger.debug("connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    // Backpressure: stop reading while the peer is not draining our responses.
    func read(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            context.read()
        } else {
            pendingRead = true
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, pendingRead {
            pendingRead = false
            context.read()
        }
        context.fireChannelWritabilityChanged()
    }

    private func teardown() {
        guard let session else { return }
        self.session = nil
        livenessTimer?.cancel()
        livenessTimer = nil
        for stream in streams.values {
            finishStream(stream)
        }
        streams.removeAll()
        nghttp2_session_del(session)
        shared.connectionClosed(self)
        logger.debug("connection closed")
    }

    // MARK: - Output

    /// Drains nghttp2's pending frames into one buffer and writes it with one flush.
    func flushOutput() {
        guard let session, let context else { return }
        var output: ByteBuffer? = nil
        while true {
            var pointer: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &pointer)
            if count < 0 {
                logger.warning("nghttp2 send failed", metadata: ["error": "\(count)"])
                context.close(promise: nil)
                return
            }
            guard count > 0, let pointer else { break }
            if output == nil {
                // Reuse last flush's storage: the previous write has normally completed and
                // released it, so clearing does not copy.
                if var spare = spareOutput.take(), spare.capacity <= 64 * 1024 {
                    spare.clear()
                    output = spare
                } else {
                    output = context.channel.allocator.buffer(capacity: max(count, 4096))
                }
            }
            output!.writeBytes(UnsafeRawBufferPointer(start: pointer, count: count))
        }
        let finished = nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0
        if let output {
            if finished || isClosing {
                let channel = self.channel
                context.writeAndFlush(wrapOutboundOut(output)).whenComplete { _ in channel.close(promise: nil) }
                return
            }
            context.writeAndFlush(wrapOutboundOut(output), promise: nil)
            spareOutput = output
        } else if finished || isClosing {
            context.close(promise: nil)
        }
    }

    private func closeAfterFlush() {
        isClosing = true
        flushOutput()
    }

    // MARK: - Liveness (handshake, idle, keepalive, request-receive timeouts)

    /// Runs the liveness machine's tick and carries out its action.
    private func livenessTick() {
        livenessTimer = nil
        livenessTimerAt = .distantFuture
        guard let session, !isClosing else { return }
        let now = NIODeadline.now()
        let receiveLimit = liveness.limits.requestReceive
        var oldestReceiving: NIODeadline?
        for stream in streams.values where stream.phase == .receiving {
            if stream.receiveStartedAt + receiveLimit <= now {
                respondError(stream, GRPCStatus(
                    .deadlineExceeded,
                    "request not received within \(shared.configuration.requestReceiveTimeout) (requestReceiveTimeout)"))
            } else {
                oldestReceiving = min(oldestReceiving ?? stream.receiveStartedAt, stream.receiveStartedAt)
            }
        }
        let (action, next) = liveness.tick(now: now, oldestReceivingCall: oldestReceiving)
        switch action {
        case .none:
            break
        case .sendPing:
            let rv = nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
            if rv != 0 { logger.warning("keepalive ping not submitted", metadata: ["error": "\(rv)"]) }
        case .closeHandshakeTimedOut:
            logger.info("closing connection: no HTTP/2 preface and SETTINGS in time",
                        metadata: ["timeout": "\(shared.configuration.handshakeTimeout)"])
            isClosing = true
            context?.close(promise: nil)
            return
        case .goawayIdle:
            logger.debug("closing idle connection", metadata: ["timeout": "\(shared.configuration.idleTimeout)"])
            submitGoaway(lastStreamID: nghttp2_session_get_last_proc_stream_id(session))
            closeAfterFlush()
            return
        case .closeUnresponsive:
            logger.info("closing connection: peer did not answer the keepalive PING",
                        metadata: ["timeout": "\(shared.configuration.keepaliveTimeout)"])
            isClosing = true
            context?.close(promise: nil)
            return
        }
        scheduleLivenessTick(at: next)
        flushOutput()
    }

    /// Makes the timer fire no later than `deadline`.
    private func scheduleLivenessTick(at deadline: NIODeadline) {
        guard deadline < livenessTimerAt else { return }
        livenessTimer?.cancel()
        livenessTimerAt = deadline
        livenessTimer = eventLoop.scheduleTask(deadline: deadline) { [self] in livenessTick() }
    }

    fileprivate func settingsReceived() {
        if !liveness.isHandshakeComplete { liveness.handshakeCompleted() }
    }

    // MARK: - Graceful shutdown

    /// GOAWAY(2^31-1) + PING; on the PING ack the final GOAWAY names the last stream.
    func beginShutdown() {
        guard let session, !isClosing else { return }
        nghttp2_submit_shutdown_notice(session)
        if nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil) == 0 {
            shutdownPingOutstanding = true
            // A peer that never acks (some stop reading after the first GOAWAY) still gets the final one.
            eventLoop.scheduleTask(in: .seconds(1)) { [self] in
                if shutdownPingOutstanding {
                    submitFinalGoaway()
                    flushOutput()
                }
            }
        } else {
            submitFinalGoaway()
        }
        flushOutput()
    }

    private func submitFinalGoaway() {
        guard let session else { return }
        shutdownPingOutstanding = false
        submitGoaway(lastStreamID: nghttp2_session_get_last_proc_stream_id(session))
    }

    private func submitGoaway(lastStreamID: Int32) {
        guard let session else { return }
        let rv = nghttp2_submit_goaway(
            session, UInt8(NGHTTP2_FLAG_NONE.rawValue), lastStreamID, UInt32(NGHTTP2_NO_ERROR.rawValue), nil, 0)
        if rv != 0 { logger.warning("GOAWAY not submitted", metadata: ["error": "\(rv)"]) }
    }

    /// Ends the connection now (graceful-shutdown timeout).
    func forceClose() {
        channel.close(promise: nil)
    }

    // MARK: - nghttp2 events (called from the C callbacks, inside mem_recv)

    fileprivate func beginRequest(streamID: Int32) {
        guard let session else { return }
        let now = NIODeadline.now()
        let stream = GRPCStream(
            id: streamID, maxMessageBytes: shared.configuration.maxReceiveMessageBytes, receiveStartedAt: now)
        streams[streamID] = stream
        nghttp2_session_set_stream_user_data(session, streamID, Unmanaged.passUnretained(stream).toOpaque())
        scheduleLivenessTick(at: liveness.callOpened(now: now))
    }

    fileprivate func header(
        _ stream: GRPCStream, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer
    ) {
        stream.headerListBytes += name.count + value.count + 32
        if stream.headerListBytes > shared.configuration.maxHeaderListBytes {
            stream.headerListOverflow = true
            return
        }
        guard let first = name.first else { return }
        if first == UInt8(ascii: ":") {
            if bytesEqual(name, ":path") {
                if value.count == cachedPathBytes.count, value.count > 0,
                   cachedPathBytes.withUnsafeBytes({ memcmp($0.baseAddress!, value.baseAddress!, value.count) == 0 }) {
                    stream.path = cachedPath
                    stream.route = cachedRoute
                } else {
                    let path = String(decoding: value, as: UTF8.self)
                    let route = shared.routes[path]
                    stream.path = path
                    stream.route = route
                    cachedPathBytes = Array(value)
                    cachedPath = path
                    cachedRoute = route
                }
            } else if bytesEqual(name, ":method") {
                stream.isPost = bytesEqual(value, "POST")
            }
            return
        }
        if bytesEqual(name, "content-type") {
            stream.contentType = isGRPCContentType(value) ? .grpc : .other
        } else if bytesEqual(name, "grpc-encoding") {
            // Only gzip is supported; with any other encoding a compressed
            // message is UNIMPLEMENTED (checked per message: the flag byte).
            if bytesEqual(value, "gzip") && !stream.gzip {
                stream.gzip = true
                stream.deframer = GRPCMessageDeframer(
                    maxMessageBytes: shared.configuration.maxReceiveMessageBytes, acceptsCompressed: true)
            }
        } else if bytesEqual(name, "te") || bytesEqual(name, "content-length") || bytesEqual(name, "grpc-accept-encoding") {
            // Transport headers, not metadata.
        } else if bytesEqual(name, "grpc-timeout") {
            if let timeout = GRPCTimeout(bytes: value) {
                stream.timeout = timeout
            } else {
                stream.timeoutInvalid = String(decoding: value.prefix(32), as: UTF8.self)
            }
        } else {
            stream.metadata.append(name: name, value: value)
        }
    }

    /// END_HEADERS of the request: validate and route; early errors are Trailers-Only.
    fileprivate func requestHeadersComplete(_ stream: GRPCStream) {
        if stream.headerListOverflow {
            respondError(stream, GRPCStatus(
                .resourceExhausted,
                "request header list exceeds \(shared.configuration.maxHeaderListBytes) bytes"))
            return
        }
        guard stream.isPost else {
            respondHTTP(stream, StaticHeaders.status405, count: 2)
            return
        }
        guard stream.contentType == .grpc else {
            respondHTTP(stream, StaticHeaders.status415, count: 2)
            return
        }
        counters.rpcStarted()
        stream.counted = true
        if let invalid = stream.timeoutInvalid {
            respondError(stream, GRPCStatus(.invalidArgument, "invalid grpc-timeout header \"\(invalid)\""))
            return
        }
        guard let route = stream.route else {
            respondError(stream, GRPCStatus(.unimplemented, "method not found: \(stream.path ?? "")"))
            return
        }
        // Before a byte of the body is buffered (a caller without a valid token
        // must not be able to hold server memory).
        if let admission = route.admission, let refusal = admission(stream.metadata) {
            respondError(stream, refusal)
            return
        }
        if let timeout = stream.timeout {
            stream.deadline = ContinuousClock.now + timeout.duration
            // Deadlines beyond ~100 days never fire in practice; avoid TimeAmount overflow.
            if timeout.duration < .seconds(8_640_000) {
                let components = timeout.duration.components
                let nanoseconds = components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
                stream.deadlineTimer = eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) { [self] in
                    deadlineExpired(stream)
                }
            }
        }
    }

    fileprivate func data(_ stream: GRPCStream, _ bytes: UnsafeRawBufferPointer) {
        guard stream.phase == .receiving, stream.counted else { return }
        if stream.message != nil {
            // Unary: anything after the first message is a cardinality violation.
            stream.extraMessage = true
            respondError(stream, GRPCStatus(.unimplemented, "unary method received more than one request message"))
            return
        }
        // Reserved before the bytes are taken: what arrives grows the buffers
        // by at most its size (a gzip message is checked again once inflated).
        guard reserveBuffer(stream, bytes.count) else { return }
        do {
            let limit = shared.configuration.maxReceiveMessageBytes
            try stream.deframer.append(bytes) { compressed, message in
                if stream.message != nil {
                    throw GRPCStatus(.unimplemented, "unary method received more than one request message")
                }
                // The deframer passes compressed messages only when gzip was negotiated.
                stream.message = compressed ? try GRPCGzip.decompress(message, limit: limit) : message
            }
        } catch let error as GRPCFramingError {
            respondError(stream, error.status)
            return
        } catch let status as GRPCStatus {
            respondError(stream, status)
            return
        } catch {
            respondError(stream, GRPCStatus(.internalError, "invalid request body"))
            return
        }
        if stream.message != nil, !stream.deframer.isAtMessageBoundary {
            respondError(stream, GRPCStatus(.unimplemented, "unary method received more than one request message"))
            return
        }
        // Settle the reservation to what is really held.
        let held = stream.deframer.bufferedBytes + (stream.message?.count ?? 0)
        let unreserved = held - stream.bufferedBytes
        if unreserved > 0 {
            _ = reserveBuffer(stream, unreserved)
        } else {
            bufferedRequestBytes += unreserved
            shared.releaseBuffered(-unreserved)
            stream.bufferedBytes = held
        }
    }

    /// Counts `bytes` more against the stream, the connection's and the
    /// server's request buffers, or ends the call with RESOURCE_EXHAUSTED
    /// naming the limit (releasing what the stream held).
    private func reserveBuffer(_ stream: GRPCStream, _ bytes: Int) -> Bool {
        let configuration = shared.configuration
        if bufferedRequestBytes + bytes > configuration.maxBufferedBytesPerConnection {
            respondError(stream, GRPCStatus(.resourceExhausted,
                "connection request buffer limit of \(configuration.maxBufferedBytesPerConnection) bytes reached"))
            return false
        }
        if !shared.reserveBuffered(bytes) {
            respondError(stream, GRPCStatus(.resourceExhausted,
                "server request buffer limit of \(configuration.maxBufferedBytes) bytes reached; retry later"))
            return false
        }
        bufferedRequestBytes += bytes
        stream.bufferedBytes += bytes
        return true
    }

    /// END_STREAM from the client: run the handler.
    fileprivate func requestEnded(_ stream: GRPCStream) {
        guard stream.phase == .receiving, stream.counted else { return }
        // The request stays counted against the buffers until the call is
        // answered: a handler still running holds its bytes.
        do {
            try stream.deframer.finish()
        } catch let error as GRPCFramingError {
            respondError(stream, error.status)
            return
        } catch {
            return
        }
        guard let message = stream.message, let handler = stream.route?.handler, let path = stream.path else {
            respondError(stream, GRPCStatus(.unimplemented, "unary method requires exactly one request message, received none"))
            return
        }
        stream.message = nil
        if let deadline = stream.deadline, deadline <= ContinuousClock.now {
            respondError(stream, GRPCStatus(.deadlineExceeded, "deadline exceeded before the call started"))
            return
        }
        let request = GRPCRequest(
            path: path, metadata: stream.metadata, message: message, deadline: stream.deadline,
            remoteAddress: remoteAddress)
        switch handler {
        case .sync(let body):
            runInline(stream, request, body)
        case .compute(let inlineBytes, let body):
            if request.message.count <= inlineBytes {
                runInline(stream, request, body)
            } else {
                runOnComputePool(stream, request, body)
            }
        case .async(let body):
            stream.phase = .running
            let loop = eventLoop
            stream.task = Task { [self] in
                let result: Result<[UInt8], any Error>
                do {
                    result = .success(try await body(request))
                } catch {
                    result = .failure(error)
                }
                loop.execute { self.asyncFinished(stream, result) }
            }
        }
    }

    private func runInline(_ stream: GRPCStream, _ request: GRPCRequest, _ body: (GRPCRequest) throws -> [UInt8]) {
        do {
            respondOK(stream, try body(request))
        } catch {
            respondError(stream, status(for: error, path: request.path))
        }
    }

    /// A large CPU-only call: queued for the compute threads (bounded), its
    /// answer submitted back on this loop. Skipped if it is cancelled or past
    /// its deadline by the time a thread takes it.
    private func runOnComputePool(
        _ stream: GRPCStream, _ request: GRPCRequest, _ body: @escaping @Sendable (GRPCRequest) throws -> [UInt8]
    ) {
        let shared = self.shared
        let limit = shared.configuration.maxQueuedComputeCalls
        guard shared.computeCalls.wrappingAdd(1, ordering: .relaxed).newValue <= limit else {
            shared.computeCalls.subtract(1, ordering: .relaxed)
            respondError(stream, GRPCStatus(.resourceExhausted,
                "server busy: \(limit) large calls already queued (maxQueuedComputeCalls); retry later"))
            return
        }
        stream.phase = .running
        let cancellation = GRPCCallCancellation()
        stream.cancellation = cancellation
        let loop = eventLoop
        shared.computePool.submit { [self] poolState in
            defer { shared.computeCalls.subtract(1, ordering: .relaxed) }
            ComputeThread.lowerPriority()
            let result: Result<[UInt8], any Error>
            if poolState != .active || cancellation.isCancelled {
                result = .failure(CancellationError())
            } else if let deadline = request.deadline, deadline <= ContinuousClock.now {
                result = .failure(GRPCStatus(.deadlineExceeded, "deadline exceeded while queued"))
            } else {
                result = Result { try body(request) }
            }
            loop.execute { self.asyncFinished(stream, result) }
        }
    }

    private func asyncFinished(_ stream: GRPCStream, _ result: Result<[UInt8], any Error>) {
        stream.task = nil
        guard stream.phase == .running, session != nil else { return }
        switch result {
        case .success(let response): respondOK(stream, response)
        case .failure(let error): respondError(stream, status(for: error, path: stream.path ?? ""))
        }
        scheduleFlush()
    }

    /// Coalesces the writes of async completions that land in the same loop tick
    /// (e.g. a group commit releasing many calls) into one write.
    private func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        eventLoop.execute { [self] in
            flushScheduled = false
            flushOutput()
        }
    }

    private func deadlineExpired(_ stream: GRPCStream) {
        stream.deadlineTimer = nil
        guard stream.phase == .receiving || stream.phase == .running, session != nil else { return }
        stream.task?.cancel()
        stream.task = nil
        stream.cancellation?.cancel()
        stream.cancellation = nil
        respondError(stream, GRPCStatus(.deadlineExceeded, "deadline exceeded"))
        flushOutput()
    }

    fileprivate func streamClosed(_ stream: GRPCStream) {
        streams.removeValue(forKey: stream.id)
        finishStream(stream)
    }

    private func finishStream(_ stream: GRPCStream) {
        stream.phase = .closed
        releaseBuffered(stream)
        stream.task?.cancel()
        stream.task = nil
        stream.cancellation?.cancel()
        stream.cancellation = nil
        if session != nil, let turnedIdle = liveness.callClosed(now: .now()) {
            scheduleLivenessTick(at: turnedIdle)
        }
        stream.deadlineTimer?.cancel()
        stream.deadlineTimer = nil
        if stream.counted {
            stream.counted = false
            counters.rpcFinished()
        }
    }

    /// Gives back everything the stream's request holds, and drops the bytes.
    private func releaseBuffered(_ stream: GRPCStream) {
        if stream.bufferedBytes != 0 {
            bufferedRequestBytes -= stream.bufferedBytes
            shared.releaseBuffered(stream.bufferedBytes)
            stream.bufferedBytes = 0
        }
        if stream.phase != .receiving {
            stream.message = nil
            stream.deframer.discard()
        }
    }

    fileprivate func pingAcked() {
        if shutdownPingOutstanding { submitFinalGoaway() }
    }

    /// After our END_STREAM, a client still sending gets RST_STREAM(NO_ERROR) (PROTOCOL-HTTP2).
    fileprivate func streamEndSent(streamID: Int32) {
        guard let session else { return }
        if nghttp2_session_get_stream_remote_close(session, streamID) == 0 {
            let rv = nghttp2_submit_rst_stream(
                session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, UInt32(NGHTTP2_NO_ERROR.rawValue))
            if rv != 0 { logger.warning("RST_STREAM(NO_ERROR) not submitted", metadata: ["error": "\(rv)"]) }
        }
    }

    // MARK: - Responses

    private func status(for error: any Error, path: String) -> GRPCStatus {
        if let status = error as? GRPCStatus { return status }
        if error is CancellationError { return GRPCStatus(.cancelled, "call cancelled") }
        logger.error("handler failed", metadata: ["path": "\(path)", "error": "\(String(reflecting: error))"])
        return GRPCStatus(.internalError, "internal error")
    }

    private func respondOK(_ stream: GRPCStream, _ body: [UInt8]) {
        guard let session else { return }
        stream.phase = .responded
        stream.deadlineTimer?.cancel()
        stream.deadlineTimer = nil
        releaseBuffered(stream)
        stream.responseBody = body
        stream.responseOffset = 0
        var provider = nghttp2_data_provider(
            source: nghttp2_data_source(ptr: Unmanaged.passUnretained(stream).toOpaque()),
            read_callback: GRPCConnection.readResponse)
        let rv = nghttp2_submit_response(session, stream.id, StaticHeaders.okResponse, StaticHeaders.okResponseCount, &provider)
        if rv != 0 { resetAfterFailedResponse(stream, rv) }
    }

    /// Trailers-Only: one HEADERS frame with END_STREAM carrying the status.
    func respondError(_ stream: GRPCStream, _ status: GRPCStatus) {
        guard let session else { return }
        stream.phase = .responded
        stream.deadlineTimer?.cancel()
        stream.deadlineTimer = nil
        releaseBuffered(stream)
        var headers: [nghttp2_nv] = (0..<StaticHeaders.okResponseCount).map { StaticHeaders.okResponse[$0] }
        let code = status.code.rawValue
        var statusValue = Array(String(code).utf8)
        var message = Array(GRPCPercentEncoding.encode(
            GRPCStatus.truncated(status.message, toUTF8Bytes: shared.configuration.maxStatusMessageBytes)).utf8)
        statusValue.withUnsafeMutableBufferPointer { statusBytes in
            message.withUnsafeMutableBufferPointer { messageBytes in
                if (0...16).contains(code) {
                    headers.append(StaticHeaders.statusNVs[code])
                } else {
                    headers.append(nghttp2_nv(
                        name: StaticHeaders.grpcStatusName.0, value: statusBytes.baseAddress,
                        namelen: StaticHeaders.grpcStatusName.1, valuelen: statusBytes.count,
                        flags: UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue)))
                }
                if !messageBytes.isEmpty {
                    headers.append(nghttp2_nv(
                        name: StaticHeaders.grpcMessageName.0, value: messageBytes.baseAddress,
                        namelen: StaticHeaders.grpcMessageName.1, valuelen: messageBytes.count,
                        flags: UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue)))
                }
                let rv = nghttp2_submit_response(session, stream.id, headers, headers.count, nil)
                if rv != 0 { resetAfterFailedResponse(stream, rv) }
            }
        }
    }

    private func respondHTTP(_ stream: GRPCStream, _ headers: UnsafeMutablePointer<nghttp2_nv>, count: Int) {
        guard let session else { return }
        stream.phase = .responded
        releaseBuffered(stream)
        let rv = nghttp2_submit_response(session, stream.id, headers, count, nil)
        if rv != 0 { resetAfterFailedResponse(stream, rv) }
    }

    /// A response nghttp2 would not take still ends the stream: RST_STREAM
    /// (INTERNAL_ERROR), so the client sees an error and the call is not left
    /// counted in flight.
    private func resetAfterFailedResponse(_ stream: GRPCStream, _ rv: Int32) {
        guard let session else { return }
        logger.warning("response not submitted; resetting the stream", metadata: [
            "stream": "\(stream.id)", "error": "\(String(cString: nghttp2_strerror(rv)))",
        ])
        let reset = nghttp2_submit_rst_stream(
            session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, UInt32(NGHTTP2_INTERNAL_ERROR.rawValue))
        if reset != 0 {
            logger.error("RST_STREAM not submitted; closing the connection", metadata: ["error": "\(reset)"])
            closeAfterFlush()
        }
    }

    // MARK: - C callbacks

    static let streamWindow: Int32 = 1 << 20
    static let connectionWindow: Int32 = 4 << 20

    nonisolated(unsafe) static let options: OpaquePointer = {
        var option: OpaquePointer?
        nghttp2_option_new(&option)
        nghttp2_option_set_no_closed_streams(option, 1)
        // Rapid-reset protection (CVE-2023-44487): token bucket of 1000, 33/s refill.
        nghttp2_option_set_stream_reset_rate_limit(option, 1000, 33)
        nghttp2_option_set_max_outbound_ack(option, 1000)
        nghttp2_option_set_max_settings(option, 32)
        nghttp2_option_set_max_continuations(option, 8)
        return option!
    }()

    nonisolated(unsafe) static let callbacks: OpaquePointer = {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, userData in
            guard let frame, let userData else { return 0 }
            if frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue),
               frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST {
                withConnection(userData) { $0.beginRequest(streamID: frame.pointee.hd.stream_id) }
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) {
            session, frame, name, nameLength, value, valueLength, _, userData in
            guard let session, let frame, let userData,
                  frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue),
                  frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST,
                  let raw = nghttp2_session_get_stream_user_data(session, frame.pointee.hd.stream_id)
            else { return 0 }
            withStream(raw) { stream in
                withConnection(userData) { connection in
                    connection.header(
                        stream, name: UnsafeRawBufferPointer(start: name, count: nameLength),
                        value: UnsafeRawBufferPointer(start: value, count: valueLength))
                }
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { session, frame, userData in
            guard let session, let frame, let userData else { return 0 }
            let type = frame.pointee.hd.type
            let endStream = frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
            if type == UInt8(NGHTTP2_SETTINGS.rawValue) {
                if frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0 {
                    withConnection(userData) { $0.settingsReceived() }
                }
                return 0
            }
            if type == UInt8(NGHTTP2_PING.rawValue) {
                if frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0 {
                    withConnection(userData) { $0.pingAcked() }
                }
                return 0
            }
            guard type == UInt8(NGHTTP2_HEADERS.rawValue) || type == UInt8(NGHTTP2_DATA.rawValue),
                  let raw = nghttp2_session_get_stream_user_data(session, frame.pointee.hd.stream_id)
            else { return 0 }
            let isRequestHeaders = type == UInt8(NGHTTP2_HEADERS.rawValue) && frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST
            withStream(raw) { stream in
                withConnection(userData) { connection in
                    if isRequestHeaders { connection.requestHeadersComplete(stream) }
                    if endStream { connection.requestEnded(stream) }
                }
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) {
            session, _, streamID, data, length, userData in
            guard let session, let userData,
                  let raw = nghttp2_session_get_stream_user_data(session, streamID)
            else { return 0 }
            withStream(raw) { stream in
                withConnection(userData) { $0.data(stream, UnsafeRawBufferPointer(start: data, count: length)) }
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { session, streamID, _, userData in
            guard let session, let userData,
                  let raw = nghttp2_session_get_stream_user_data(session, streamID)
            else { return 0 }
            // +1 here: streamClosed drops the connection's reference.
            let stream = Unmanaged<GRPCStream>.fromOpaque(raw).takeUnretainedValue()
            nghttp2_session_set_stream_user_data(session, streamID, nil)
            withConnection(userData) { $0.streamClosed(stream) }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, userData in
            guard let frame, let userData else { return 0 }
            let type = frame.pointee.hd.type
            if frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0,
               type == UInt8(NGHTTP2_HEADERS.rawValue) || type == UInt8(NGHTTP2_DATA.rawValue) {
                withConnection(userData) { $0.streamEndSent(streamID: frame.pointee.hd.stream_id) }
            }
            return 0
        }
        return callbacks!
    }()

    /// Copies the 5-byte prefix and the body into nghttp2's DATA buffer; at the end
    /// submits the `grpc-status: 0` trailers (END_STREAM goes on the trailers).
    static let readResponse: nghttp2_data_source_read_callback = {
        session, streamID, buffer, length, flags, source, _ in
        guard let session, let buffer, let flags, let source, let raw = source.pointee.ptr else {
            return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
        }
        let stream = Unmanaged<GRPCStream>.fromOpaque(raw).takeUnretainedValue()
        let bodyCount = stream.responseBody.count
        let total = bodyCount + 5
        var written = 0
        while stream.responseOffset < 5, written < length {
            let length32 = UInt32(truncatingIfNeeded: bodyCount)
            let byte: UInt8 = switch stream.responseOffset {
            case 0: 0
            case 1: UInt8(truncatingIfNeeded: length32 >> 24)
            case 2: UInt8(truncatingIfNeeded: length32 >> 16)
            case 3: UInt8(truncatingIfNeeded: length32 >> 8)
            default: UInt8(truncatingIfNeeded: length32)
            }
            buffer[written] = byte
            written += 1
            stream.responseOffset += 1
        }
        let take = min(length - written, total - stream.responseOffset)
        if take > 0 {
            stream.responseBody.withUnsafeBufferPointer { body in
                (buffer + written).update(from: body.baseAddress! + (stream.responseOffset - 5), count: take)
            }
            written += take
            stream.responseOffset += take
        }
        if stream.responseOffset == total {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue | NGHTTP2_DATA_FLAG_NO_END_STREAM.rawValue
            stream.responseBody = []
            nghttp2_submit_trailer(session, streamID, StaticHeaders.okTrailers, 1)
        }
        return written
    }

    /// The connection behind nghttp2's user_data, without retain/release traffic
    /// (it owns the session, so it outlives every callback).
    @inline(__always)
    private static func withConnection<R>(_ userData: UnsafeMutableRawPointer, _ body: (GRPCConnection) -> R) -> R {
        Unmanaged<GRPCConnection>.fromOpaque(userData)._withUnsafeGuaranteedRef(body)
    }

    /// The stream behind nghttp2's stream user data (kept alive by `streams` until on_stream_close).
    @inline(__always)
    private static func withStream<R>(_ raw: UnsafeMutableRawPointer, _ body: (GRPCStream) -> R) -> R {
        Unmanaged<GRPCStream>.fromOpaque(raw)._withUnsafeGuaranteedRef(body)
    }
}

@inline(__always)
func bytesEqual(_ bytes: UnsafeRawBufferPointer, _ literal: StaticString) -> Bool {
    guard bytes.count == literal.utf8CodeUnitCount else { return false }
    let pointer = literal.utf8Start
    for index in 0..<bytes.count where bytes[index] != pointer[index] { return false }
    return true
}

/// `application/grpc`, `application/grpc+<subtype>` or `application/grpc;<params>`.
func isGRPCContentType(_ value: UnsafeRawBufferPointer) -> Bool {
    let base: StaticString = "application/grpc"
    let baseCount = base.utf8CodeUnitCount
    guard value.count >= baseCount else { return false }
    let pointer = base.utf8Start
    for index in 0..<baseCount {
        var byte = value[index]
        if byte >= UInt8(ascii: "A"), byte <= UInt8(ascii: "Z") { byte += 32 }
        if byte != pointer[index] { return false }
    }
    if value.count == baseCount { return true }
    let next = value[baseCount]
    return next == UInt8(ascii: "+") || next == UInt8(ascii: ";")
}
