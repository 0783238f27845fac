import CInterop
import NIOCore
import TLSTransport

/// One request being received / answered by the simulator.
final class SimulatorStream {
    let id: Int32
    var headers: [(name: String, value: String)] = []
    var headerBytes = 0
    var body: [UInt8] = []
    var bodyTooLarge = false
    var refused = false
    var response: [UInt8] = []
    var responseOffset = 0

    init(id: Int32) { self.id = id }
}

/// The server side of one simulator connection: an nghttp2 server session in
/// memory mode behind ``OpenSSLHandler``. Runs on its channel's event loop.
final class SimulatorConnection: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private static let maxBody = 4096
    private static let maxHeaderBytes = 16_384

    let id: Int
    private let state: SimulatorState
    private var context: ChannelHandlerContext?
    private var session: OpaquePointer?
    private var streams: [Int32: SimulatorStream] = [:]
    private var tokenState = ConnectionTokenState()
    private var outbound = ByteBufferAllocator().buffer(capacity: 0)
    private var insideSession = false
    private var streamsBegun = 0
    private var goAwayLastStreamID: Int32?
    private var closing = false
    /// Subject of the client certificate (certificate auth), if one was presented.
    private var clientCertificate: String?

    init(id: Int, state: SimulatorState) {
        self.id = id
        self.state = state
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        outbound = context.channel.allocator.buffer(capacity: 4096)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        streams.removeAll()
        if session != nil { state.emit(.connectionClosed(connectionID: id)) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let completed = event as? TLSHandshakeCompleted {
            clientCertificate = completed.peerCertificateSubject
            startSession()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)  // TLS garbage, handshake failures: just drop the connection
    }

    private func startSession() {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, onBeginHeaders)
        nghttp2_session_callbacks_set_on_header_callback(callbacks, onHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, onDataChunk)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, onFrameReceived)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, onStreamClose)
        var option: OpaquePointer?
        nghttp2_option_new(&option)
        defer { nghttp2_option_del(option) }
        nghttp2_option_set_no_closed_streams(option, 1)
        var newSession: OpaquePointer?
        guard nghttp2_session_server_new2(&newSession, callbacks, Unmanaged.passUnretained(self).toOpaque(), option) == 0,
              let newSession else {
            context?.close(promise: nil)
            return
        }
        session = newSession
        state.emit(.connectionOpened(connectionID: id))
        var settings = [
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                value: UInt32(state.configuration.maxConcurrentStreams)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20),
        ]
        nghttp2_submit_settings(newSession, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        nghttp2_session_set_local_window_size(newSession, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 1 << 24)
        flush()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let session, !closing else { return }
        let buffer = unwrapInboundIn(data)
        insideSession = true
        let failure = NGHTTP2.receive(session, buffer)
        insideSession = false
        if failure != nil {
            // nghttp2 already queued GOAWAY(PROTOCOL_ERROR) where it could; send it and drop the connection.
            flush()
            closeAfterFlush()
            return
        }
        flush()
    }

    // MARK: Streams

    fileprivate func beginStream(_ streamID: Int32) {
        let stream = SimulatorStream(id: streamID)
        streams[streamID] = stream
        streamsBegun += 1
        state.observeConcurrentStreams(streams.count)
        if let lastAccepted = goAwayLastStreamID {
            if streamID > lastAccepted { stream.refused = true }
        } else if let limit = state.goAwayAfterStreams(), streamsBegun >= limit, let session {
            goAwayLastStreamID = streamID
            nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_NO_ERROR.rawValue, nil, 0)
        }
    }

    fileprivate func stream(_ id: Int32) -> SimulatorStream? { streams[id] }

    fileprivate func received(_ event: (Int) -> APNsSimulatorEvent) { state.emit(event(id)) }

    fileprivate func addHeader(_ stream: SimulatorStream, name: String, value: String) {
        stream.headerBytes += name.utf8.count + value.utf8.count
        if stream.headerBytes <= Self.maxHeaderBytes && stream.headers.count < 64 {
            stream.headers.append((name, value))
        }
    }

    fileprivate func addBody(_ stream: SimulatorStream, _ bytes: UnsafeBufferPointer<UInt8>) {
        if stream.body.count + bytes.count > Self.maxBody {
            stream.bodyTooLarge = true
        } else {
            stream.body.append(contentsOf: bytes)
        }
    }

    /// The whole request arrived: validate, inject faults, record, answer.
    fileprivate func requestComplete(_ stream: SimulatorStream) {
        guard let session else { return }
        if stream.refused {
            nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, NGHTTP2_REFUSED_STREAM.rawValue)
            return
        }
        let outcome = RequestValidator.validate(
            headers: stream.headers, body: stream.body, bodyTooLarge: stream.bodyTooLarge,
            certificateAuthenticated: clientCertificate != nil, tokenState: &tokenState, state: state)
        let status: Int
        let apnsID: String
        var body: [UInt8] = []
        switch outcome {
        case .reject(let rejectStatus, let reason, let id):
            status = rejectStatus
            apnsID = id
            body = Array(#"{"reason":"\#(reason)"}"#.utf8)
        case .accept(let deviceToken, let acceptedID):
            let topic = stream.headers.first { $0.name == "apns-topic" }?.value
            if state.hangs(token: deviceToken, topic: topic) {  // never answered
                state.emit(.requestHeld(connectionID: id, deviceToken: deviceToken, topic: topic))
                return
            }
            apnsID = acceptedID
            if let (faultStatus, reason, timestamp) = state.injectedFault(token: deviceToken) {
                status = faultStatus
                let stamp = timestamp.map { #","timestamp":\#($0)"# } ?? ""
                body = Array(#"{"reason":"\#(reason)"\#(stamp)}"#.utf8)
            } else {
                status = 200
                state.record(APNsDelivery(
                    connectionID: id, streamID: stream.id, apnsID: acceptedID, deviceToken: deviceToken,
                    headers: stream.headers, payload: stream.body))
            }
        }
        if status != 200 { state.countStatus(status) }
        stream.response = body
        let delay = state.responseDelay()
        if delay > .zero, let context {
            let nanoseconds = Int64(delay.secondsValue * 1e9)
            let streamID = stream.id
            context.eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) { [self] in
                guard let stream = streams[streamID] else { return }
                submitResponse(stream, status: status, apnsID: apnsID)
                flush()
            }
        } else {
            submitResponse(stream, status: status, apnsID: apnsID)
        }
    }

    private func submitResponse(_ stream: SimulatorStream, status: Int, apnsID: String) {
        guard let session else { return }
        var headers: [(name: String, value: String)] = [(":status", String(status)), ("apns-id", apnsID)]
        if !stream.response.isEmpty {
            headers.append(("content-type", "application/json"))
            headers.append(("content-length", String(stream.response.count)))
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: readResponse)
            _ = NGHTTP2.withHeaders(headers) { nva, count in
                nghttp2_submit_response(session, stream.id, nva, count, &provider)
            }
        } else {
            _ = NGHTTP2.withHeaders(headers) { nva, count in
                nghttp2_submit_response(session, stream.id, nva, count, nil)
            }
        }
    }

    fileprivate func streamClosed(_ id: Int32) {
        streams.removeValue(forKey: id)
    }

    // MARK: Output

    private func flush() {
        guard let session, let context, !insideSession, !closing else { return }
        insideSession = true
        let ok = NGHTTP2.drain(session, into: &outbound)
        insideSession = false
        if outbound.readableBytes > 0 {
            let chunk = outbound
            outbound = context.channel.allocator.buffer(capacity: 4096)
            context.writeAndFlush(wrapOutboundOut(chunk), promise: nil)
        }
        let goAwayDone = goAwayLastStreamID.map { last in !streams.keys.contains { $0 <= last } } ?? false
        if !ok || goAwayDone || NGHTTP2.isFinished(session) {
            closeAfterFlush()
        }
    }

    private func closeAfterFlush() {
        guard let context, !closing else { return }
        closing = true
        if let session, NGHTTP2.drain(session, into: &outbound), outbound.readableBytes > 0 {
            context.write(wrapOutboundOut(outbound), promise: nil)
        }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(capacity: 0))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }
}

// MARK: - nghttp2 callbacks

@inline(__always)
private func connection(_ userData: UnsafeMutableRawPointer?) -> SimulatorConnection {
    Unmanaged<SimulatorConnection>.fromOpaque(userData!).takeUnretainedValue()
}

private let onBeginHeaders: nghttp2_on_begin_headers_callback = { _, frame, userData in
    guard let frame, UInt32(frame.pointee.hd.type) == NGHTTP2_HEADERS.rawValue,
          frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST else { return 0 }
    connection(userData).beginStream(frame.pointee.hd.stream_id)
    return 0
}

private let onHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, userData in
    guard let frame else { return 0 }
    let owner = connection(userData)
    guard let stream = owner.stream(frame.pointee.hd.stream_id) else { return 0 }
    owner.addHeader(stream, name: NGHTTP2.string(name, nameLength), value: NGHTTP2.string(value, valueLength))
    return 0
}

private let onDataChunk: nghttp2_on_data_chunk_recv_callback = { _, _, streamID, data, length, userData in
    let owner = connection(userData)
    guard let data, let stream = owner.stream(streamID) else { return 0 }
    owner.addBody(stream, UnsafeBufferPointer(start: data, count: length))
    return 0
}

private let onFrameReceived: nghttp2_on_frame_recv_callback = { _, frame, userData in
    guard let frame else { return 0 }
    let header = frame.pointee.hd
    let type = UInt32(header.type)
    if type == NGHTTP2_PING.rawValue && header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0 {
        connection(userData).received { .ping(connectionID: $0) }
        return 0
    }
    if type == NGHTTP2_GOAWAY.rawValue {
        connection(userData).received { .goAwayReceived(connectionID: $0) }
        return 0
    }
    guard type == NGHTTP2_HEADERS.rawValue || type == NGHTTP2_DATA.rawValue,
          header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 else { return 0 }
    let owner = connection(userData)
    guard let stream = owner.stream(header.stream_id) else { return 0 }
    owner.requestComplete(stream)
    return 0
}

private let onStreamClose: nghttp2_on_stream_close_callback = { _, streamID, _, userData in
    connection(userData).streamClosed(streamID)
    return 0
}

private let readResponse: nghttp2_data_source_read_callback = { _, streamID, buffer, length, flags, _, userData in
    guard let stream = connection(userData).stream(streamID), let buffer, let flags else {
        return ssize_t(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
    }
    let count = min(length, stream.response.count - stream.responseOffset)
    if count > 0 {
        stream.response.withUnsafeBufferPointer { source in
            buffer.update(from: source.baseAddress! + stream.responseOffset, count: count)
        }
        stream.responseOffset += count
    }
    if stream.responseOffset >= stream.response.count {
        flags.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue)
    }
    return count
}
