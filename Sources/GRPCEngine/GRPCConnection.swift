import CInterop
import HTTP2Core
import Logging
import NIOCore

/// One HTTP/2 connection: a thin NIO handler around an `HTTP2Session`
/// (server role, memory mode). Connection life is `GRPCConnectionStateMachine`,
/// timeouts are `GRPCConnectionLiveness`; streams are in +Streams and +Dispatch.
///
/// Everything runs on the channel's event loop. `@unchecked Sendable` stays
/// because the server registry and handler Tasks hold the connection and hop
/// back with `eventLoop.execute`; every member is touched only on that loop
/// (NIOLoopBound would put a check on every nghttp2 callback of the hot path).
/// Every entry point (channel events, nghttp2 events, timers, hops back from
/// handlers) asserts it with ``assertOnLoop(file:line:)``: checked in debug
/// builds, compiled out of release builds.
final class GRPCConnection: ChannelDuplexHandler, HTTP2SessionDelegate, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let shared: GRPCServerShared
    let channel: any Channel
    let eventLoop: any EventLoop
    let counters = GRPCConnectionCounters()
    /// The call tally's table of this connection's loop (nil: no tally).
    let callTable: GRPCCallTally.Table?
    /// This loop's shares of the server's request-buffer budgets (admitted, unauthenticated).
    let bufferShare: LoopBudget
    let unauthenticatedBufferShare: LoopBudget
    var logger: Logger

    var session: HTTP2Session?
    private var context: ChannelHandlerContext?
    // @exclusivity(unchecked): loop-confined, and no access to these overlaps
    // another; the runtime check cost ~75 instructions per access.
    @exclusivity(unchecked) var streams = GRPCStreamList()
    @exclusivity(unchecked) var bufferedRequestBytes = 0
    private var pendingRead = false
    private var spareOutput: ByteBuffer?
    private var flushScheduled = false
    var state = GRPCConnectionStateMachine()
    /// Streams whose handler waits in `send` for the queue to drain.
    var waitingWriters: [GRPCStream] = []
    /// Bodies of closed unary responses, for the next ones (see `unaryBody`).
    @exclusivity(unchecked) var spareBodies: HTTP2OutboundBody?
    @exclusivity(unchecked) var spareBodyCount = 0
    private(set) var remoteAddress: String?
    /// Unauthenticated routes' streaming calls open on this connection.
    var unauthenticatedStreams = 0
    #if DEBUG
    /// nghttp2 is inside `receive` or `nextOutput` (its callbacks may run).
    private var insideSession = 0
    #endif

    // Handshake, idle, keepalive and request-receive timeouts: one timer,
    // rescheduled only when an event needs it earlier than planned.
    var liveness: GRPCConnectionLiveness
    private var livenessTimer: Scheduled<Void>?
    private var livenessTimerAt: NIODeadline = .distantFuture

    // A one-entry route cache: clients hammer the same method on a connection.
    @exclusivity(unchecked) var cachedPathBytes: [UInt8] = []
    @exclusivity(unchecked) var cachedPath: String = ""
    /// Unowned as `GRPCStream.route` (the shared routes outlive the connection).
    @exclusivity(unchecked) unowned(unsafe) var cachedRoute: GRPCRoute?

    static let streamWindow: UInt32 = 1 << 20
    static let connectionWindow: Int32 = 4 << 20
    /// How long a drain waits for the PING ack before the final GOAWAY.
    static let drainPingTimeout: TimeAmount = .seconds(1)

    init(shared: GRPCServerShared, channel: any Channel) {
        self.shared = shared
        self.channel = channel
        self.eventLoop = channel.eventLoop
        self.logger = shared.logger
        self.callTable = shared.tally?.table(for: channel.eventLoop)
        self.bufferShare = shared.bufferedBytes.share(for: channel.eventLoop)
        self.unauthenticatedBufferShare = shared.unauthenticatedBufferedBytes.share(for: channel.eventLoop)
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
            let text = address.protocol == .inet6 ? "[\(ip)]:\(port)" : "\(ip):\(port)"
            remoteAddress = text
            logger[metadataKey: "peer"] = "\(text)"
        }
    }

    static var sessionOptions: HTTP2SessionOptions {
        var options = HTTP2SessionOptions()
        // Rapid-reset protection (CVE-2023-44487): token bucket of 1000, 33/s refill.
        options.streamResetRateLimit = (burst: 1000, rate: 33)
        options.maxOutboundAck = 1000
        options.maxSettings = 32
        options.maxContinuations = 8
        return options
    }

    /// Fails a debug build when called off the connection's loop. `assert`
    /// and not `eventLoop.assertInEventLoop()`: the whole check, the
    /// existential call included, is gone from release builds (the hot path).
    @inline(__always)
    func assertOnLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(eventLoop.inEventLoop, "GRPCConnection used off its event loop", file: file, line: line)
    }

    // MARK: - Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        assertOnLoop()
        self.context = context
        let configuration = shared.configuration
        do {
            let session = try HTTP2Session(role: .server, delegate: self, options: Self.sessionOptions)
            try session.submitSettings([
                (NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, UInt32(clamping: configuration.maxConcurrentStreams)),
                (NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, UInt32(clamping: configuration.maxHeaderListBytes)),
                (NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, Self.streamWindow),
            ])
            try session.setLocalWindowSize(Self.connectionWindow)
            self.session = session
        } catch {
            logger.error("nghttp2 session setup failed", metadata: ["error": "\(error)"])
            context.close(promise: nil)
            return
        }
        shared.connectionOpened(self)
        livenessTick()
        logger.debug("connection accepted")
        if context.channel.isActive { flushOutput() }
    }

    func channelActive(context: ChannelHandlerContext) {
        assertOnLoop()
        flushOutput()
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        assertOnLoop()
        guard let session, state.acceptsInput else { return }
        liveness.peerSentBytes()
        do {
            #if DEBUG
            insideSession += 1
            defer { insideSession -= 1 }
            #endif
            try session.receive(unwrapInboundIn(data))
        } catch {
            logger.info("closing connection after protocol error", metadata: ["error": "\(error.reason)"])
            if !error.isBadClientMagic {
                do { try session.terminate(errorCode: NGHTTP2_PROTOCOL_ERROR) } catch {
                    logger.debug("GOAWAY not submitted", metadata: ["error": "\(error)"])
                }
            }
            closeAfterFlush()
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        assertOnLoop()
        flushOutput()
    }

    func channelInactive(context: ChannelHandlerContext) {
        assertOnLoop()
        teardown()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        assertOnLoop()
        teardown()
        self.context = nil
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        assertOnLoop()
        logger.debug("connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    // Backpressure: stop reading while the peer is not draining our responses.
    func read(context: ChannelHandlerContext) {
        assertOnLoop()
        if context.channel.isWritable {
            context.read()
        } else {
            pendingRead = true
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        assertOnLoop()
        if context.channel.isWritable {
            if pendingRead {
                pendingRead = false
                context.read()
            }
            wakeWriters()
        }
        context.fireChannelWritabilityChanged()
    }

    private func teardown() {
        guard session != nil else { return }
        #if DEBUG
        if insideSession > 0 {
            logger.error("connection torn down inside an nghttp2 call")
            shared.testFaults.teardownsInsideSession.add(1, ordering: .relaxed)
        }
        #endif
        state.closed()
        livenessTimer?.cancel()
        livenessTimer = nil
        for stream in streams.all {
            finishStream(stream)
        }
        streams.removeAll()
        waitingWriters.removeAll()
        session = nil
        shared.connectionClosed(self)
        logger.debug("connection closed")
    }

    // MARK: - Output

    /// Drains nghttp2's pending frames into one buffer and writes it with one flush.
    func flushOutput() {
        assertOnLoop()
        guard let session, let context else { return }
        var output: ByteBuffer? = nil
        do {
            #if DEBUG
            insideSession += 1
            defer { insideSession -= 1 }
            #endif
            while let chunk = try session.nextOutput() {
                if output == nil {
                    // Reuse last flush's storage: the previous write has normally completed and
                    // released it, so clearing does not copy.
                    if var spare = spareOutput.take(), spare.capacity <= 64 * 1024 {
                        spare.clear()
                        output = spare
                    } else {
                        output = context.channel.allocator.buffer(capacity: max(chunk.count, 4096))
                    }
                }
                // A plain copy: `writeBytes` went through NIO's generic `_setBytes`.
                output!.writeWithUnsafeMutableBytes(minimumWritableBytes: chunk.count) { target in
                    target.copyMemory(from: chunk)
                    return chunk.count
                }
            }
        } catch {
            logger.warning("nghttp2 send failed", metadata: ["error": "\(error)"])
            context.close(promise: nil)
            return
        }
        let finished = session.isFinished && state.mayCloseWhenSessionIsDone
        let closing = finished || state.isClosing
        if let output {
            if closing {
                let channel = self.channel
                context.writeAndFlush(wrapOutboundOut(output)).whenComplete { _ in channel.close(promise: nil) }
                return
            }
            context.writeAndFlush(wrapOutboundOut(output), promise: nil)
            spareOutput = output
            if !waitingWriters.isEmpty { wakeWriters() }
        } else if closing {
            context.close(promise: nil)
        }
    }

    func closeAfterFlush() {
        state.close()
        flushOutput()
    }

    /// Coalesces the writes of async completions that land in the same loop tick
    /// (e.g. a group commit releasing many calls) into one write.
    func scheduleFlush() {
        assertOnLoop()
        guard !flushScheduled else { return }
        flushScheduled = true
        eventLoop.execute { [self] in
            flushScheduled = false
            flushOutput()
        }
    }

    // MARK: - Liveness (handshake, idle, keepalive, request-receive timeouts)

    /// Runs the liveness machine's tick and carries out its action.
    private func livenessTick() {
        assertOnLoop()
        livenessTimer = nil
        livenessTimerAt = .distantFuture
        guard let session, state.acceptsInput else { return }
        let now = NIODeadline.now()
        let receiveLimit = liveness.limits.requestReceive
        var oldestReceiving: NIODeadline?
        for stream in streams.all where stream.phase == .receiving {
            if stream.receiveStartedAt + receiveLimit <= now {
                if let answer = stream.pendingAnswer {
                    respondPending(stream, answer, ended: false)
                    continue
                }
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
            do { try session.submitPing(payload: 0) } catch {
                logger.warning("keepalive ping not submitted", metadata: ["error": "\(error)"])
            }
        case .closeHandshakeTimedOut:
            logger.info("closing connection: no HTTP/2 preface and SETTINGS in time",
                        metadata: ["timeout": "\(shared.configuration.handshakeTimeout)"])
            state.close()
            context?.close(promise: nil)
            return
        case .goawayIdle:
            logger.debug("closing idle connection", metadata: ["timeout": "\(shared.configuration.idleTimeout)"])
            // Their trailers go out ahead of the GOAWAY (some clients, such
            // as python-h2, drop every frame after a GOAWAY).
            if endBackgroundCalls() { flushOutput() }
            submitFinalGoaway()
            closeAfterFlush()
            return
        case .closeUnresponsive:
            logger.info("closing connection: peer did not answer the keepalive PING",
                        metadata: ["timeout": "\(shared.configuration.keepaliveTimeout)"])
            state.close()
            context?.close(promise: nil)
            return
        }
        scheduleLivenessTick(at: next)
        flushOutput()
    }

    /// Makes the timer fire no later than `deadline`.
    func scheduleLivenessTick(at deadline: NIODeadline) {
        assertOnLoop()
        guard deadline < livenessTimerAt else { return }
        livenessTimer?.cancel()
        livenessTimerAt = deadline
        livenessTimer = eventLoop.scheduleTask(deadline: deadline) { [self] in livenessTick() }
    }

    // MARK: - Graceful shutdown

    /// GOAWAY(2^31-1) + PING; on the PING ack the final GOAWAY names the last stream.
    func beginShutdown() {
        assertOnLoop()
        guard let session, state.acceptsInput else { return }
        let payload = UInt64.random(in: 1...UInt64.max)
        guard case .sendShutdownNoticeAndPing = state.beginGracefulShutdown(pingPayload: payload) else { return }
        // Streaming handlers get a moment to end by themselves (they learn of
        // the drain from the application) before they are cancelled.
        eventLoop.scheduleTask(in: TimeAmount(shared.configuration.streamingDrainGrace)) { [self] in
            streamsDraining()
        }
        do {
            try session.submitShutdownNotice()
            try session.submitPing(payload: payload)
            // A peer that never acks (some stop reading after the first GOAWAY) still gets the final one.
            eventLoop.scheduleTask(in: Self.drainPingTimeout) { [self] in
                perform(state.drainPingTimedOut())
                flushOutput()
            }
        } catch {
            logger.warning("shutdown notice not submitted", metadata: ["error": "\(error)"])
            perform(state.drainPingFailed())
        }
        flushOutput()
    }

    private func perform(_ action: GRPCConnectionStateMachine.Action) {
        switch action {
        case .none, .sendShutdownNoticeAndPing: break
        case .sendFinalGoaway: submitFinalGoaway()
        }
    }

    private func submitFinalGoaway() {
        guard let session else { return }
        do { try session.submitGoaway(lastStreamID: session.lastProcessedStreamID) } catch {
            logger.warning("GOAWAY not submitted", metadata: ["error": "\(error)"])
        }
    }

    /// Ends the connection now (graceful-shutdown timeout). Any thread: it
    /// only asks the channel to close.
    func forceClose() {
        channel.close(promise: nil)
    }

    // MARK: - nghttp2 events (inside mem_recv / mem_send)

    func http2Session(_ session: HTTP2Session, event: HTTP2SessionEvent) {
        assertOnLoop()
        switch event {
        case .beginHeaders(let streamID, let category):
            if category == .request { beginRequest(streamID: streamID) }
        case .header(_, let data, let category, let name, let value):
            guard category == .request, let data else { return }
            Self.withStream(data) { header($0, name: name, value: value) }
        case .headersComplete(_, let data, let category):
            guard category == .request, let data else { return }
            Self.withStream(data) { requestHeadersComplete($0) }
        case .dataChunk(_, let data, let bytes):
            guard let data else { return }
            Self.withStream(data) { self.data($0, bytes) }
        case .endStream(_, let data):
            guard let data else { return }
            Self.withStream(data) { requestEnded($0) }
        case .streamClosed(_, let data, _):
            guard let data else { return }
            // +1 here: streamClosed drops the connection's reference.
            streamClosed(Unmanaged<GRPCStream>.fromOpaque(data).takeUnretainedValue())
        case .settings:
            if !liveness.isHandshakeComplete { liveness.handshakeCompleted() }
        case .pingAck(let payload):
            perform(state.pingAcked(payload: payload))
        case .endStreamSent(let streamID):
            streamEndSent(streamID: streamID)
        case .resetReceived, .goaway, .pingReceived:
            break
        }
    }

    /// The stream behind nghttp2's stream user data (kept alive by `streams` until it closes).
    @inline(__always)
    static func withStream<R>(_ raw: UnsafeMutableRawPointer, _ body: (GRPCStream) -> R) -> R {
        Unmanaged<GRPCStream>.fromOpaque(raw)._withUnsafeGuaranteedRef(body)
    }
}
