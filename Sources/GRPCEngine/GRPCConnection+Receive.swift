import CInterop
import HTTP2Core
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// Request headers and body of a call, as nghttp2 events deliver them.
extension GRPCConnection {
    func beginRequest(streamID: Int32) {
        guard let session else { return }
        let now = NIODeadline.now()
        let stream = GRPCStream(
            id: streamID, maxMessageBytes: shared.configuration.maxReceiveMessageBytes, receiveStartedAt: now)
        streams.insert(stream)
        session.setStreamData(Unmanaged.passUnretained(stream).toOpaque(), for: streamID)
        scheduleLivenessTick(at: liveness.callOpened(now: now))
    }

    func header(
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
                stream.isHead = bytesEqual(value, "HEAD")
            }
            return
        }
        if bytesEqual(name, "content-type") {
            if isGRPCContentType(value) {
                stream.contentType = .grpc
            } else {
                stream.contentType = .other
                stream.plainContentType = String(decoding: value.prefix(256), as: UTF8.self)
            }
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
    func requestHeadersComplete(_ stream: GRPCStream) {
        if stream.headerListOverflow {
            respondError(stream, GRPCStatus(
                .resourceExhausted,
                "request header list exceeds \(shared.configuration.maxHeaderListBytes) bytes"))
            return
        }
        // Not a gRPC call: answered once the request has ended (see `pendingAnswer`).
        guard stream.isPost else {
            stream.pendingAnswer = .notPost
            return
        }
        guard stream.contentType == .grpc else {
            stream.pendingAnswer = plainAnswer(stream) ?? .notGRPC
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
        if route.unauthenticated, !admitUnauthenticated(stream, route) { return }
        if let timeout = stream.timeout {
            stream.deadlineBox = GRPCCallDeadline(after: timeout.duration)
            // Deadlines beyond ~100 days never fire in practice; avoid TimeAmount overflow.
            if timeout.duration < .seconds(8_640_000) {
                let components = timeout.duration.components
                let nanoseconds = components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
                let bound = NIOLoopBound(stream, eventLoop: eventLoop)
                stream.deadlineTimer = eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) { [self] in
                    deadlineExpired(bound.value)
                }
            }
        }
        if case .bidirectional(let body) = route.streaming {
            startBidirectional(stream, body)
        }
    }

    func data(_ stream: GRPCStream, _ bytes: UnsafeRawBufferPointer) {
        if stream.hasInbound {
            inboundData(stream, bytes)
            return
        }
        guard stream.phase == .receiving, stream.counted else {
            if case .plainCall = stream.pendingAnswer { plainData(stream, bytes) }
            return
        }
        if stream.message != nil {
            // Unary: anything after the first message is a cardinality violation.
            stream.extraMessage = true
            respondError(stream, GRPCStatus(.unimplemented, "unary method received more than one request message"))
            return
        }
        // Reserved before the bytes are taken: what arrives grows the buffers
        // by at most its size (a gzip message is checked again once inflated).
        // The closure captures the stream and an Int, not `self` (each
        // captured reference cost a retain and a release per call).
        let limit = stream.deframer.maxMessageBytes
        let deframed = deframe(stream, bytes) { compressed, message in
            if stream.message != nil {
                throw GRPCStatus(.unimplemented, "unary method received more than one request message")
            }
            stream.message = compressed ? try GRPCGzip.decompress(message, limit: limit) : message
        }
        guard deframed else { return }
        if stream.message != nil, !stream.deframer.isAtMessageBoundary {
            respondError(stream, GRPCStatus(.unimplemented, "unary method received more than one request message"))
            return
        }
        settleReservation(stream, held: stream.deframer.bufferedBytes + (stream.message?.count ?? 0))
    }

    /// Reserves `bytes` (what arrives grows the buffers by at most its size),
    /// feeds them to the deframer and hands each whole message to `onMessage`.
    /// False when the call was ended with an error status. Inlined, so that
    /// the caller's closure is too (out of line it cost 4 retains per call).
    @inline(__always)
    func deframe(
        _ stream: GRPCStream, _ bytes: UnsafeRawBufferPointer, _ onMessage: (Bool, [UInt8]) throws -> Void
    ) -> Bool {
        guard reserveBuffer(stream, bytes.count) else { return false }
        do {
            try stream.deframer.append(bytes, onMessage)
            return true
        } catch let error as GRPCFramingError {
            respondError(stream, framingStatus(stream, error))
        } catch let status as GRPCStatus {
            respondError(stream, status)
        } catch {
            respondError(stream, GRPCStatus(.internalError, "invalid request body"))
        }
        return false
    }

    /// The status of a framing error; an unauthenticated route's size limit is named as such.
    func framingStatus(_ stream: GRPCStream, _ error: GRPCFramingError) -> GRPCStatus {
        guard stream.unauthenticated, case .messageTooLarge(let declared, let limit) = error else { return error.status }
        return GRPCStatus(.resourceExhausted, "request message of \(declared) bytes exceeds the limit of \(limit) bytes "
            + "for methods callable without a token (unauthenticatedMaxReceiveMessageBytes)")
    }

    /// A message as the handler gets it. The deframer passes compressed
    /// messages only when gzip was negotiated; inflated size is checked again.
    func inflate(_ compressed: Bool, _ message: [UInt8], limit: Int) throws -> [UInt8] {
        compressed ? try GRPCGzip.decompress(message, limit: limit) : message
    }

    /// Puts a call of an unauthenticated route under that class's limits
    /// (before any of its body arrives): the smaller message size, the
    /// separate buffer budget and, for a streaming call, one of the bounded
    /// slots and the age limit. False when it was refused (answered).
    func admitUnauthenticated(_ stream: GRPCStream, _ route: GRPCRoute) -> Bool {
        stream.unauthenticated = true
        stream.deframer = GRPCMessageDeframer(
            maxMessageBytes: shared.configuration.unauthenticatedMaxReceiveMessageBytes, acceptsCompressed: stream.gzip)
        guard route.streaming != nil else { return true }
        guard unauthenticatedStreams < shared.configuration.unauthenticatedMaxStreamsPerConnection else {
            respondError(stream, GRPCStatus(.resourceExhausted,
                "too many streaming calls without a token on this connection: limit "
                    + "\(shared.configuration.unauthenticatedMaxStreamsPerConnection) (unauthenticatedMaxStreamsPerConnection)"))
            return false
        }
        guard shared.unauthenticatedStreams.reserve(1) else {
            respondError(stream, GRPCStatus(.resourceExhausted,
                "too many streaming calls without a token on this server: limit "
                    + "\(shared.configuration.unauthenticatedMaxStreams) (unauthenticatedMaxStreams); retry later"))
            return false
        }
        unauthenticatedStreams += 1
        stream.holdsUnauthenticatedSlot = true
        let bound = NIOLoopBound(stream, eventLoop: eventLoop)
        stream.ageTimer = eventLoop.scheduleTask(in: TimeAmount(shared.configuration.unauthenticatedMaxStreamAge)) { [self] in
            streamAged(bound.value)
        }
        return true
    }

    /// Gives back an unauthenticated streaming call's slot and stops its age timer.
    func releaseUnauthenticatedSlot(_ stream: GRPCStream) {
        stream.ageTimer?.cancel()
        stream.ageTimer = nil
        guard stream.holdsUnauthenticatedSlot else { return }
        stream.holdsUnauthenticatedSlot = false
        unauthenticatedStreams -= 1
        shared.unauthenticatedStreams.release(1)
    }

    /// An unauthenticated streaming call reached `unauthenticatedMaxStreamAge`: it ends with UNAVAILABLE.
    func streamAged(_ stream: GRPCStream) {
        assertOnLoop()
        stream.ageTimer = nil
        guard session != nil, stream.machine.deadlineExpired() else { return }
        endStreamingCall(stream, GRPCStatus(.unavailable,
            "call reached the maximum age of \(shared.configuration.unauthenticatedMaxStreamAge) for methods "
                + "callable without a token (unauthenticatedMaxStreamAge); call again"))
        flushOutput()
    }

    /// Ends a call whose handler may still run: the handler is cancelled, the status sent.
    func endStreamingCall(_ stream: GRPCStream, _ status: GRPCStatus) {
        stream.task?.cancel()
        stream.task = nil
        respondError(stream, status)
    }

    /// Settles the stream's reservation to the bytes it really holds.
    func settleReservation(_ stream: GRPCStream, held: Int) {
        let unreserved = held - stream.bufferedBytes
        if unreserved > 0 {
            _ = reserveBuffer(stream, unreserved)
        } else {
            releaseReservation(stream, -unreserved)
        }
    }

    /// Gives `bytes` of the stream's reservation back to the connection and the server.
    func releaseReservation(_ stream: GRPCStream, _ bytes: Int) {
        guard bytes > 0 else { return }
        bufferedRequestBytes -= bytes
        releaseShared(stream, bytes)
        stream.bufferedBytes -= bytes
    }

    /// Gives `bytes` back to the server-wide budget the stream draws from.
    @inline(__always)
    func releaseShared(_ stream: GRPCStream, _ bytes: Int) {
        (stream.unauthenticated ? unauthenticatedBufferShare : bufferShare).release(bytes)
    }

    /// The request's END_STREAM: no partial message may remain. False when the call was ended.
    func finishDeframing(_ stream: GRPCStream) -> Bool {
        do {
            try stream.deframer.finish()
            return true
        } catch let error as GRPCFramingError {
            respondError(stream, error.status)
        } catch {}
        return false
    }

    /// Counts `bytes` more against the stream, the connection's and the
    /// server's request buffers, or ends the call with RESOURCE_EXHAUSTED
    /// naming the limit (releasing what the stream held).
    func reserveBuffer(_ stream: GRPCStream, _ bytes: Int) -> Bool {
        if bufferedRequestBytes + bytes > shared.configuration.maxBufferedBytesPerConnection {
            respondError(stream, GRPCStatus(.resourceExhausted,
                "connection request buffer limit of \(shared.configuration.maxBufferedBytesPerConnection) bytes reached"))
            return false
        }
        guard (stream.unauthenticated ? unauthenticatedBufferShare : bufferShare).reserve(bytes) else {
            respondError(stream, GRPCStatus(.resourceExhausted, stream.unauthenticated
                ? "server request buffer limit of \(shared.configuration.unauthenticatedMaxBufferedBytes) bytes for methods "
                    + "callable without a token reached (unauthenticatedMaxBufferedBytes); retry later"
                : "server request buffer limit of \(shared.configuration.maxBufferedBytes) bytes reached; retry later"))
            return false
        }
        bufferedRequestBytes += bytes
        stream.bufferedBytes += bytes
        return true
    }

    /// END_STREAM from the client: run the handler.
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

/// Plain (non-gRPC) calls on HTTP/2 (``GRPCPlainCalls``).
extension GRPCConnection {
    /// A POST that is not gRPC: what ``GRPCPlainCalls`` makes of it (out of
    /// line: nothing of it on a gRPC call's path).
    @inline(never)
    func plainAnswer(_ stream: GRPCStream) -> GRPCStream.PendingAnswer? {
        guard let plain = shared.configuration.plainCalls, let path = stream.path, stream.contentType == .other,
              let admission = plain.admit(path, stream.plainContentType ?? "", stream.metadata) else { return nil }
        switch admission {
        case .answer(let answer): return .plain(answer)
        case .call(let call):
            // A method callable without a token: that class's message size and buffer budget.
            if stream.route?.unauthenticated == true { stream.unauthenticated = true }
            return .plainCall(call)
        }
    }

    /// A plain call's body bytes, bounded by `maxReceiveMessageBytes` and
    /// held under the same buffer budgets as a gRPC call's (per connection
    /// and server-wide, released when the call is answered or its stream
    /// closes); past either, the call is refused with RESOURCE_EXHAUSTED.
    @inline(never)
    func plainData(_ stream: GRPCStream, _ bytes: UnsafeRawBufferPointer) {
        let configuration = shared.configuration
        let limit = stream.unauthenticated
            ? configuration.unauthenticatedMaxReceiveMessageBytes : configuration.maxReceiveMessageBytes
        var refusal: String?
        if stream.plainBody.count + bytes.count > limit {
            refusal = "the body is larger than \(limit) bytes" + (stream.unauthenticated
                ? " (unauthenticatedMaxReceiveMessageBytes, for methods callable without a token)" : " (maxReceiveMessageBytes)")
        } else if bufferedRequestBytes + bytes.count > configuration.maxBufferedBytesPerConnection {
            refusal = "connection request buffer limit of \(configuration.maxBufferedBytesPerConnection) bytes reached"
        } else if !(stream.unauthenticated ? unauthenticatedBufferShare : bufferShare).reserve(bytes.count) {
            refusal = "server request buffer limit reached; retry later"
        }
        if let refusal {
            stream.plainBody = []
            releaseBuffered(stream)
            stream.pendingAnswer = configuration.plainCalls.map { .plain($0.refusal(GRPCStatus(.resourceExhausted, refusal))) }
                ?? .notGRPC
            return
        }
        bufferedRequestBytes += bytes.count
        stream.bufferedBytes += bytes.count
        stream.plainBody.append(contentsOf: bytes)
    }
}
