import CInterop
package import HTTP2Core
package import NIOCore
import TLSTransport

/// The server side of one simulator connection: an nghttp2 server session in
/// memory mode behind ``OpenSSLHandler``, answering as its ``SimulatorAdapter``
/// says. Everything runs on the channel's event loop, asserted at every entry
/// (free in release builds); that confinement is why `@unchecked Sendable`
/// holds.
package final class SimulatorConnection<Adapter: SimulatorAdapter>:
    ChannelInboundHandler, HTTP2SessionDelegate, @unchecked Sendable
{
    package typealias InboundIn = ByteBuffer
    package typealias OutboundOut = ByteBuffer
    typealias Stream = SimulatorStream<Adapter.Request>
    /// `Stream`, resolved once per connection: this class is not specialized
    /// for its adapter, so naming the generic type per stream would look its
    /// metadata up at run time each time.
    private let streamType = Stream.self

    private let eventLoop: any EventLoop
    private var adapter: Adapter
    private var lifecycle = SimulatorConnectionLifecycle<HTTP2Session>()
    private var context: ChannelHandlerContext?
    /// Every stream here is a `Stream` (see ``typed(_:)``).
    private var streams: [Int32: SimulatorStreamBase] = [:]
    private var outbound = ByteBufferAllocator().buffer(capacity: 0)
    private var insideSession = false
    private var streamsBegun = 0
    /// The highest stream whose request was answered, held or dropped.
    private var highestProcessed: Int32 = 0
    private var lastActivity = NIODeadline.now()
    private var idleTimer: Scheduled<Void>?

    /// - Parameter eventLoop: the channel's loop (the initializer runs on it).
    package init(adapter: Adapter, eventLoop: any EventLoop) {
        self.adapter = adapter
        self.eventLoop = eventLoop
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        eventLoop.assertInEventLoop()
        self.context = context
        outbound = context.channel.allocator.buffer(capacity: 4096)
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        eventLoop.assertInEventLoop()
        idleTimer?.cancel()
        idleTimer = nil
        for stream in streams.values { stream.receiveTimer?.cancel() }
        self.context = nil
        streams.removeAll()
        if lifecycle.remove() { adapter.connectionClosed() }
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        eventLoop.assertInEventLoop()
        if let completed = event as? TLSHandshakeCompleted {
            adapter.handshakeCompleted(completed)
            startSession()
        }
        context.fireUserInboundEventTriggered(event)
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        eventLoop.assertInEventLoop()
        context.close(promise: nil)  // TLS garbage, handshake failures: just drop the connection
    }

    private func startSession() {
        let settings = adapter.sessionSettings
        do {
            let newSession = try HTTP2Session(role: .server, delegate: self, options: settings.options)
            var entries: [(id: nghttp2_settings_id, value: UInt32)] = [
                (NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, UInt32(settings.maxConcurrentStreams)),
                (NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20),
            ]
            if let size = settings.maxHeaderListSize { entries.append((NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, UInt32(size))) }
            try newSession.submitSettings(entries)
            try newSession.setLocalWindowSize(1 << 24)
            guard lifecycle.start(newSession) else { return }
        } catch {
            context?.close(promise: nil)
            return
        }
        adapter.sessionStarted()
        if let idleTimeout = adapter.idleTimeout { scheduleIdleCheck(after: idleTimeout, timeout: idleTimeout) }
        flush()
    }

    package func http2Session(_ session: HTTP2Session, event: HTTP2SessionEvent) {
        eventLoop.assertInEventLoop()
        switch event {
        case .beginHeaders(let streamID, let category):
            if category == .request { beginStream(streamID) }
        case .header(let streamID, _, let category, let name, let value):
            guard let stream = streams[streamID] else { return }
            typed(stream).request.addHeader(name: name, value: value, trailer: category != .request)
        case .dataChunk(let streamID, _, let bytes):
            guard let stream = streams[streamID] else { return }
            typed(stream).request.addBody(bytes)
        case .endStream(let streamID, _):
            guard let stream = streams[streamID] else { return }
            requestComplete(typed(stream))
        case .streamClosed(let streamID, _, _):
            streams.removeValue(forKey: streamID)?.receiveTimer?.cancel()
        case .pingReceived:
            adapter.pingReceived()
        case .goaway:
            adapter.goAwayReceived()
        case .headersComplete, .resetReceived, .settings, .pingAck, .endStreamSent:
            break
        }
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        eventLoop.assertInEventLoop()
        guard let session = lifecycle.session else { return }
        if adapter.idleTimeout != nil { lastActivity = .now() }
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

    /// A stream of ``streams`` as the `Stream` it is (made only by ``beginStream(_:)``).
    private func typed(_ stream: SimulatorStreamBase) -> Stream {
        unsafeDowncast(stream, to: Stream.self)
    }

    private func beginStream(_ streamID: Int32) {
        let stream = streamType.init(id: streamID)
        streams[streamID] = stream
        streamsBegun += 1
        let goAway = adapter.streamBegan(streamID: streamID, streamsBegun: streamsBegun, openStreams: streams.count)
        if goAway, lifecycle.goAwayLastStreamID == nil, let session = lifecycle.session {
            lifecycle.goAwaySent(lastStreamID: streamID)
            do { try session.submitGoaway(lastStreamID: streamID) } catch { closeAfterFlush() }
        }
        if let timeout = adapter.requestTimeout {
            stream.receiveTimer = eventLoop.scheduleTask(in: TimeAmount(timeout)) { [self] in
                eventLoop.assertInEventLoop()
                // A request still arriving (a slow or stalled peer): give up on it.
                guard let session = lifecycle.session, streams[streamID] != nil, !session.isRemoteClosed(streamID) else {
                    return
                }
                try? session.submitRSTStream(streamID: streamID, errorCode: NGHTTP2_CANCEL)
                flush()
            }
        }
    }

    /// The whole request arrived: ask the adapter and act.
    private func requestComplete(_ stream: Stream) {
        guard let session = lifecycle.session else { return }
        stream.receiveTimer?.cancel()
        stream.receiveTimer = nil
        if let last = lifecycle.goAwayLastStreamID, stream.id > last {
            guard adapter.resetsStreamsPastGoAway else { return }  // else nghttp2 closes these itself
            do { try session.submitRSTStream(streamID: stream.id, errorCode: NGHTTP2_REFUSED_STREAM) } catch {
                closeAfterFlush()
            }
            return
        }
        let action = adapter.respond(to: stream.request, streamID: stream.id)
        if action != .refuseWithGoAway { highestProcessed = max(highestProcessed, stream.id) }
        switch action {
        case .hold:
            break
        case .drop:
            _ = lifecycle.beginClose()
            context?.close(promise: nil)
        case .refuseWithGoAway:
            // Streams before this one stay answerable; a later one already
            // processed (streams may complete out of order) is named too.
            let last = max(min(lifecycle.goAwayLastStreamID ?? .max, max(stream.id - 2, highestProcessed)), 0)
            lifecycle.goAwaySent(lastStreamID: last)
            do {
                try session.submitRSTStream(streamID: stream.id, errorCode: NGHTTP2_REFUSED_STREAM)
                try session.submitGoaway(lastStreamID: last)
            } catch {
                closeAfterFlush()
            }
        case .respond(let response, let delay):
            stream.response = response.body.isEmpty ? nil : HTTP2OutboundBody(response.body)
            if delay > .zero {
                let streamID = stream.id
                eventLoop.scheduleTask(in: TimeAmount(delay)) { [self] in
                    eventLoop.assertInEventLoop()
                    guard let stream = streams[streamID] else { return }
                    submit(response, on: stream)
                    flush()
                }
            } else {
                submit(response, on: stream)
            }
        }
    }

    private func submit(_ response: SimulatorResponse, on stream: SimulatorStreamBase) {
        guard let session = lifecycle.session else { return }
        var headers: [(name: String, value: String)] = [(":status", String(response.status))]
        headers += response.headers
        if let body = stream.response { headers.append(("content-length", String(body.pendingBytes))) }
        let submitted = NGHTTP2Headers.with(headers) { nva, count in
            Result { () throws(HTTP2SessionError) in
                try session.submitResponse(streamID: stream.id, headers: nva, count: count, body: stream.response)
            }
        }
        if case .failure = submitted { closeAfterFlush() }
    }

    // MARK: Idle

    private func scheduleIdleCheck(after delay: Duration, timeout: Duration) {
        idleTimer = eventLoop.scheduleTask(in: TimeAmount(delay)) { [self] in
            eventLoop.assertInEventLoop()
            guard let session = lifecycle.session, context != nil else { return }
            let idleFor = NIODeadline.now() - lastActivity
            if idleFor >= TimeAmount(timeout) && streams.isEmpty {
                try? session.submitGoaway(lastStreamID: highestProcessed)
                flush()
                closeAfterFlush()
            } else {
                let wait = max(TimeAmount(timeout) - idleFor, .milliseconds(100))
                scheduleIdleCheck(after: .nanoseconds(wait.nanoseconds), timeout: timeout)
            }
        }
    }

    // MARK: Output

    private func flush() {
        guard let session = lifecycle.session, let context, !insideSession else { return }
        insideSession = true
        let ok = (try? session.drainOutput(into: &outbound)) != nil
        insideSession = false
        if outbound.readableBytes > 0 {
            let chunk = outbound
            outbound = context.channel.allocator.buffer(capacity: 4096)
            context.writeAndFlush(wrapOutboundOut(chunk), promise: nil)
        }
        let goAwayDone = lifecycle.goAwayLastStreamID.map { last in !streams.keys.contains { $0 <= last } } ?? false
        if !ok || goAwayDone || session.isFinished {
            closeAfterFlush()
        }
    }

    private func closeAfterFlush() {
        guard let context else { return }
        let session = lifecycle.session
        guard lifecycle.beginClose() else { return }
        if let session, (try? session.drainOutput(into: &outbound)) != nil, outbound.readableBytes > 0 {
            context.write(wrapOutboundOut(outbound), promise: nil)
        }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(capacity: 0))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }
}
