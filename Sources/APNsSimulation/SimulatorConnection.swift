import CInterop
import HTTP2Core
import HeraldPrimitives
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
    /// The response body as nghttp2's DATA source (kept alive until the stream closes).
    var response: HTTP2OutboundBody?

    init(id: Int32) { self.id = id }
}

/// The server side of one simulator connection: an nghttp2 server session in
/// memory mode behind ``OpenSSLHandler``. Runs on its channel's event loop.
final class SimulatorConnection: ChannelInboundHandler, HTTP2SessionDelegate, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private static let maxBody = 4096
    private static let maxHeaderBytes = 16_384

    let id: Int
    private let state: SimulatorState
    private var context: ChannelHandlerContext?
    private var session: HTTP2Session?
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
        do {
            let newSession = try HTTP2Session(role: .server, delegate: self)
            try newSession.submitSettings([
                (NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, UInt32(state.configuration.maxConcurrentStreams)),
                (NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20),
            ])
            try newSession.setLocalWindowSize(1 << 24)
            session = newSession
        } catch {
            context?.close(promise: nil)
            return
        }
        state.emit(.connectionOpened(connectionID: id))
        flush()
    }

    func http2Session(_ session: HTTP2Session, event: HTTP2SessionEvent) {
        switch event {
        case .beginHeaders(let streamID, let category):
            if category == .request { beginStream(streamID) }
        case .header(let streamID, _, _, let name, let value):
            guard let stream = streams[streamID] else { return }
            addHeader(stream, name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self))
        case .dataChunk(let streamID, _, let bytes):
            guard let stream = streams[streamID] else { return }
            addBody(stream, bytes)
        case .endStream(let streamID, _):
            guard let stream = streams[streamID] else { return }
            requestComplete(stream)
        case .streamClosed(let streamID, _, _):
            streams.removeValue(forKey: streamID)
        case .pingReceived:
            state.emit(.ping(connectionID: id))
        case .goaway:
            state.emit(.goAwayReceived(connectionID: id))
        case .headersComplete, .resetReceived, .settings, .pingAck, .endStreamSent:
            break
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let session, !closing else { return }
        let buffer = unwrapInboundIn(data)
        insideSession = true
        let failure: HTTP2SessionError?
        do { try session.receive(buffer); failure = nil } catch { failure = error }
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

    private func beginStream(_ streamID: Int32) {
        let stream = SimulatorStream(id: streamID)
        streams[streamID] = stream
        streamsBegun += 1
        state.observeConcurrentStreams(streams.count)
        if let lastAccepted = goAwayLastStreamID {
            if streamID > lastAccepted { stream.refused = true }
        } else if let limit = state.goAwayAfterStreams(), streamsBegun >= limit, let session {
            goAwayLastStreamID = streamID
            do { try session.submitGoaway(lastStreamID: streamID) } catch { closeAfterFlush() }
        }
    }

    private func addHeader(_ stream: SimulatorStream, name: String, value: String) {
        stream.headerBytes += name.utf8.count + value.utf8.count
        if stream.headerBytes <= Self.maxHeaderBytes && stream.headers.count < 64 {
            stream.headers.append((name, value))
        }
    }

    private func addBody(_ stream: SimulatorStream, _ bytes: UnsafeRawBufferPointer) {
        if stream.body.count + bytes.count > Self.maxBody {
            stream.bodyTooLarge = true
        } else {
            stream.body.append(contentsOf: bytes)
        }
    }

    /// The whole request arrived: validate, inject faults, record, answer.
    private func requestComplete(_ stream: SimulatorStream) {
        guard let session else { return }
        if stream.refused {
            do { try session.submitRSTStream(streamID: stream.id, errorCode: NGHTTP2_REFUSED_STREAM) } catch {
                closeAfterFlush()
            }
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
        stream.response = body.isEmpty ? nil : HTTP2OutboundBody(body)
        let delay = state.responseDelay()
        if delay > .zero, let context {
            let nanoseconds = Int64(delay.timeInterval * 1e9)
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
        if let response = stream.response {
            headers.append(("content-type", "application/json"))
            headers.append(("content-length", String(response.pendingBytes)))
        }
        let submitted = NGHTTP2Headers.with(headers) { nva, count in
            Result { () throws(HTTP2SessionError) in
                try session.submitResponse(streamID: stream.id, headers: nva, count: count, body: stream.response)
            }
        }
        if case .failure = submitted { closeAfterFlush() }
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
