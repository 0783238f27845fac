import CInterop
import NIOCore
import TLSTransport

/// A request handed to a connection, with how to complete it.
/// Handed to the slot's event loop once, then touched only there.
final class PendingRequest: @unchecked Sendable {
    let request: APNsRequest
    let promise: EventLoopPromise<APNsResponse>
    /// Fires the deadline (queued or in flight).
    var deadlineTask: Scheduled<Void>?
    var completed = false
    /// The caller's ``APNsRequest/willHandOver`` finished for this attempt:
    /// the request may be written.
    var handOverRecorded = false
    /// Where the request is now, so a cancelled caller can withdraw it.
    weak var connection: APNsConnection?
    var streamID: Int32 = 0

    init(request: APNsRequest, promise: EventLoopPromise<APNsResponse>) {
        self.request = request
        self.promise = promise
    }

    func succeed(_ response: APNsResponse) {
        guard !completed else { return }
        completed = true
        deadlineTask?.cancel()
        promise.succeed(response)
    }

    func fail(_ error: APNsError) {
        guard !completed else { return }
        completed = true
        deadlineTask?.cancel()
        promise.fail(error)
    }
}

/// Per-stream state of one request in flight.
final class StreamState {
    let pending: PendingRequest
    let token: String?
    var payloadOffset = 0
    var status = 0
    var apnsID: String?
    var body: [UInt8] = []
    /// Reset by us: why the caller gets (deadline or cancellation).
    var abandonedWith: APNsError?
    /// Resets the stream when no response came within the response timeout.
    var responseTimer: APNsTimer?

    init(pending: PendingRequest, token: String?) {
        self.pending = pending
        self.token = token
    }
}

/// Events a connection reports to its slot (on the slot's event loop).
protocol APNsConnectionDelegate: AnyObject {
    func connectionReady(_ connection: APNsConnection)
    func connectionHasCapacity(_ connection: APNsConnection)
    func connectionStoppedAccepting(_ connection: APNsConnection)
    func connectionClosed(_ connection: APNsConnection, error: APNsError?, wasReady: Bool)
}

/// One HTTP/2 connection to APNs: an nghttp2 client session in memory mode
/// behind ``OpenSSLHandler``. Lives on one event loop; every method runs there.
final class APNsConnection: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    enum State { case connecting, ready, draining, closed }

    let id: Int
    let eventLoop: any EventLoop
    private let authority: String
    private let tokens: ProviderTokenCache?
    private let clock: any APNsClock
    private let localStreamCap: Int
    private let responseTimeout: Duration
    private let pingInterval: Duration
    private let idleTimeout: Duration?
    weak var delegate: (any APNsConnectionDelegate)?

    private(set) var state: State = .connecting
    private var context: ChannelHandlerContext?
    private var session: OpaquePointer?
    private var streams: [Int32: StreamState] = [:]
    private var outbound: ByteBuffer
    private var insideReceive = false
    private var capacityFreed = false
    private var closeError: APNsError?
    private var keepAlive: RepeatedTask?
    private var lastActivity = NIODeadline.now()
    private var lastStreamActivity = NIODeadline.now()
    private var pingOutstanding = false

    init(id: Int, eventLoop: any EventLoop, authority: String, tokens: ProviderTokenCache?, clock: any APNsClock,
         localStreamCap: Int, responseTimeout: Duration, pingInterval: Duration, idleTimeout: Duration?) {
        self.id = id
        self.eventLoop = eventLoop
        self.authority = authority
        self.tokens = tokens
        self.clock = clock
        self.localStreamCap = localStreamCap
        self.responseTimeout = responseTimeout
        self.pingInterval = pingInterval
        self.idleTimeout = idleTimeout
        self.outbound = ByteBufferAllocator().buffer(capacity: 0)
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    /// Streams open now.
    var inFlight: Int { streams.count }

    /// True when a new stream may start now.
    var canStartStream: Bool { freeStreams > 0 }

    /// How many more streams may start now.
    var freeStreams: Int {
        guard state == .ready, let session else { return 0 }
        let remote = Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
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
        lastActivity = .now()
        insideReceive = true
        let failure = NGHTTP2.receive(session, buffer)
        insideReceive = false
        if let failure {
            close(error: .connectionClosed("HTTP/2 protocol error: \(failure)"))
            return
        }
        afterEvents()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        closed(error: closeError ?? .connectionClosed("connection closed"))
    }

    /// The TCP connect itself failed.
    func failedToConnect(_ error: APNsError) {
        if closeError == nil { closeError = error }
        closed(error: closeError)
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed(error: closeError ?? .connectionClosed("connection closed by peer"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let apnsError: APNsError
        if let tls = error as? TLSError {
            let retryable = tls.kind == .handshakeFailed || tls.kind == .protocolError
            apnsError = state == .connecting ? .connectFailed(tls.description, retryable: retryable)
                : .connectionClosed(tls.description)
        } else {
            apnsError = state == .connecting ? .connectFailed("\(error)", retryable: true)
                : .connectionClosed("\(error)")
        }
        if closeError == nil { closeError = apnsError }
        context.close(promise: nil)
    }

    // MARK: Session

    private func startSession() {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_header_callback(callbacks, onHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, onDataChunk)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, onStreamClose)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, onFrameReceived)
        var option: OpaquePointer?
        nghttp2_option_new(&option)
        defer { nghttp2_option_del(option) }
        nghttp2_option_set_no_closed_streams(option, 1)
        var newSession: OpaquePointer?
        let userData = Unmanaged.passUnretained(self).toOpaque()
        guard nghttp2_session_client_new2(&newSession, callbacks, userData, option) == 0, let newSession else {
            close(error: .connectFailed("nghttp2_session_client_new failed", retryable: false))
            return
        }
        session = newSession
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20),
        ]
        nghttp2_submit_settings(newSession, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        nghttp2_session_set_local_window_size(newSession, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 1 << 24)
        flush()
        scheduleKeepAlive()
    }

    /// The server's SETTINGS arrived: streams may start.
    fileprivate func receivedSettings() {
        guard state == .connecting else { return }
        state = .ready
        delegate?.connectionReady(self)
    }

    fileprivate func receivedGoAway() {
        guard state == .ready || state == .connecting else { return }
        state = .draining
        delegate?.connectionStoppedAccepting(self)
    }

    fileprivate func receivedPingAck() { pingOutstanding = false }

    /// Starts a stream for `pending`. The caller checked ``canStartStream``.
    func start(_ pending: PendingRequest) {
        guard let session, !pending.completed else { return }
        let token: ProviderTokenCache.Token?
        do {
            token = try tokens?.current(now: clock.now())
        } catch {
            pending.fail(.configuration("cannot sign provider token: \(error)"))
            return
        }
        let request = pending.request
        var headers: [(name: String, value: String)] = [
            (":method", "POST"), (":scheme", "https"), (":authority", authority),
            (":path", "/3/device/" + request.deviceToken),
        ]
        headers.reserveCapacity(request.headers.count + 6)
        if let token { headers.append(("authorization", "bearer " + token.value)) }
        headers.append(contentsOf: request.headers)
        headers.append(("content-length", String(request.payload.count)))
        let stream = StreamState(pending: pending, token: token?.value)
        var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: readPayload)
        let streamID = NGHTTP2.withHeaders(headers) { nva, count in
            nghttp2_submit_request(session, nil, nva, count, &provider, nil)
        }
        guard streamID > 0 else {
            pending.fail(.connectionClosed("nghttp2_submit_request: \(String(cString: nghttp2_strerror(streamID)))"))
            return
        }
        streams[streamID] = stream
        pending.connection = self
        pending.streamID = streamID
        lastStreamActivity = .now()
        // A hung endpoint must not hold the request until its TTL: reset the
        // stream after the response timeout; the client retries.
        stream.responseTimer = clock.schedule(after: responseTimeout, on: eventLoop) { [weak self] in
            self?.cancelStream(streamID, because: .responseTimeout)
        }
        if let deadline = request.deadline {
            pending.deadlineTask?.cancel()
            let remaining = deadline.timeIntervalSince(clock.now())
            pending.deadlineTask = eventLoop.scheduleTask(in: .nanoseconds(Int64(max(remaining, 0) * 1e9))) { [weak self] in
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
    func cancelStream(_ streamID: Int32, because error: APNsError) {
        guard let session, let stream = streams[streamID] else { return }
        stream.abandonedWith = error
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_CANCEL.rawValue)
        afterEvents()
    }

    fileprivate func stream(_ id: Int32) -> StreamState? { streams[id] }

    fileprivate func streamClosed(_ id: Int32, errorCode: UInt32) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        stream.responseTimer?.cancel()
        lastStreamActivity = .now()
        capacityFreed = true
        if let abandoned = stream.abandonedWith {
            stream.pending.fail(abandoned)
        } else if stream.status != 0 && errorCode == NGHTTP2_NO_ERROR.rawValue {
            let response = APNsResponse.parse(status: stream.status, apnsID: stream.apnsID, body: stream.body)
            if response.reason == .expiredProviderToken, let token = stream.token {
                // One token per connection: retire this one; the retry opens a fresh connection and token.
                tokens?.expire(token)
                retire()
            }
            stream.pending.succeed(response)
        } else if errorCode == NGHTTP2_REFUSED_STREAM.rawValue {
            stream.pending.fail(.streamRefused)
        } else {
            stream.pending.fail(.streamReset(errorCode))
        }
    }

    /// Stop taking streams, finish the open ones, then close.
    func retire() {
        guard state == .ready || state == .connecting else { return }
        state = .draining
        if let session {
            nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue),
                                  nghttp2_session_get_last_proc_stream_id(session), NGHTTP2_NO_ERROR.rawValue, nil, 0)
        }
        delegate?.connectionStoppedAccepting(self)
        if !insideReceive { afterEvents() }
    }

    /// After a batch of received frames: write what nghttp2 queued, free capacity, close if done.
    private func afterEvents() {
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
        let drained = NGHTTP2.drain(session, into: &outbound)
        insideReceive = false
        guard drained else {
            close(error: .connectionClosed("nghttp2_session_mem_send failed"))
            return
        }
        if outbound.readableBytes > 0 {
            let chunk = outbound
            outbound = context.channel.allocator.buffer(capacity: 4096)
            context.writeAndFlush(wrapOutboundOut(chunk), promise: nil)
        }
        if NGHTTP2.isFinished(session) && state != .connecting {
            close(error: nil)
        }
    }

    // MARK: Keep-alive

    private func scheduleKeepAlive() {
        let interval = TimeAmount.nanoseconds(Int64(pingInterval.seconds * 1e9))
        keepAlive = eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { [weak self] _ in
            self?.keepAliveTick(interval: interval)
        }
    }

    private func keepAliveTick(interval: TimeAmount) {
        guard let session, state == .ready || state == .draining else { return }
        let now = NIODeadline.now()
        if let idleTimeout, streams.isEmpty,
           now - lastStreamActivity >= .nanoseconds(Int64(idleTimeout.seconds * 1e9)) {
            retire()
            return
        }
        if pingOutstanding {
            close(error: .connectionClosed("PING not answered"))
            return
        }
        if now - lastActivity >= interval {
            pingOutstanding = true
            nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
            afterEvents()
        }
    }

    // MARK: Closing

    func close(error: APNsError?) {
        if closeError == nil { closeError = error }
        if let context, state != .closed {
            context.close(promise: nil)
        } else {
            closed(error: error)
        }
    }

    /// The channel is gone: fail what is still open and tell the slot.
    func closed(error: APNsError?) {
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

// MARK: - nghttp2 callbacks

@inline(__always)
private func connection(_ userData: UnsafeMutableRawPointer?) -> APNsConnection {
    Unmanaged<APNsConnection>.fromOpaque(userData!).takeUnretainedValue()
}

private let readPayload: nghttp2_data_source_read_callback = { _, streamID, buffer, length, flags, _, userData in
    guard let stream = connection(userData).stream(streamID), let buffer, let flags else {
        return ssize_t(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
    }
    let payload = stream.pending.request.payload
    let count = min(length, payload.count - stream.payloadOffset)
    if count > 0 {
        payload.withUnsafeBufferPointer { source in
            buffer.update(from: source.baseAddress! + stream.payloadOffset, count: count)
        }
        stream.payloadOffset += count
    }
    if stream.payloadOffset >= payload.count {
        flags.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue)
    }
    return count
}

private let onHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, userData in
    guard let frame, let stream = connection(userData).stream(frame.pointee.hd.stream_id) else { return 0 }
    let headerName = NGHTTP2.string(name, nameLength)
    if headerName == ":status" {
        stream.status = Int(NGHTTP2.string(value, valueLength)) ?? 0
    } else if headerName == "apns-id" {
        stream.apnsID = NGHTTP2.string(value, valueLength)
    }
    return 0
}

private let onDataChunk: nghttp2_on_data_chunk_recv_callback = { _, _, streamID, data, length, userData in
    guard let stream = connection(userData).stream(streamID), let data else { return 0 }
    if stream.body.count + length <= 65_536 {
        stream.body.append(contentsOf: UnsafeBufferPointer(start: data, count: length))
    }
    return 0
}

private let onStreamClose: nghttp2_on_stream_close_callback = { _, streamID, errorCode, userData in
    connection(userData).streamClosed(streamID, errorCode: errorCode)
    return 0
}

private let onFrameReceived: nghttp2_on_frame_recv_callback = { _, frame, userData in
    guard let frame else { return 0 }
    let header = frame.pointee.hd
    switch UInt32(header.type) {
    case NGHTTP2_SETTINGS.rawValue where header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0:
        connection(userData).receivedSettings()
    case NGHTTP2_GOAWAY.rawValue:
        connection(userData).receivedGoAway()
    case NGHTTP2_PING.rawValue where header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0:
        connection(userData).receivedPingAck()
    default:
        break
    }
    return 0
}
