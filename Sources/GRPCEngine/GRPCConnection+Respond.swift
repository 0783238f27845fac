import CInterop
import HTTP2Core
import NIOCore

/// Responses: messages with OK trailers, Trailers-Only errors, plain HTTP answers.
extension GRPCConnection {
    func status(for error: any Error, path: String) -> GRPCStatus {
        if let status = error as? GRPCStatus { return status }
        if error is CancellationError { return GRPCStatus(.cancelled, "call cancelled") }
        logger.error("handler failed", metadata: ["path": "\(path)", "error": "\(String(reflecting: error))"])
        return GRPCStatus(.internalError, "internal error")
    }

    /// Unary success: HEADERS, one length-prefixed message, `grpc-status: 0` trailers.
    func respondOK(_ stream: GRPCStream, _ message: [UInt8]) {
        guard let session, stream.machine.end() == .trailersOnly else { return }
        stream.finalStatus = 0
        stream.deadlineTimer?.cancel()
        stream.deadlineTimer = nil
        releaseBuffered(stream)
        let body = unaryBody(message)
        stream.responseBody = body
        stream.recyclesBody = true
        do throws(HTTP2SessionError) {
            try injectedSubmissionFault()
            try session.submitResponse(
                streamID: stream.id, headers: StaticHeaders.okResponse, count: StaticHeaders.okResponseCount, body: body)
        } catch {
            resetAfterFailedResponse(stream, error)
        }
    }

    /// The most spare bodies a connection keeps (one per concurrent stream).
    static let maxSpareBodies = 128

    /// A unary response's body: the message, then `grpc-status: 0`. A spare
    /// one when there is one: an allocation, its init and deinit cost ~600
    /// instructions per call.
    private func unaryBody(_ message: [UInt8]) -> HTTP2OutboundBody {
        let trailers = HTTP2OutboundBody.Trailers.staticList(StaticHeaders.okTrailers, count: 1)
        guard let spare = spareBodies else {
            return HTTP2OutboundBody(message, prefixed: true, trailers: trailers)
        }
        spareBodies = spare.nextSpare
        spare.nextSpare = nil
        spareBodyCount -= 1
        spare.reuse(message, prefixed: true, trailers: trailers)
        return spare
    }

    /// Keeps the body of a closed stream's unary response for the next one.
    /// Only `respondOK`'s bodies: nothing but the stream holds them, and
    /// nghttp2 reads no more of a closed stream.
    func recycleBody(_ stream: GRPCStream) {
        guard stream.recyclesBody, let body = stream.responseBody, spareBodyCount < Self.maxSpareBodies else { return }
        stream.responseBody = nil
        stream.recyclesBody = false
        body.nextSpare = spareBodies
        spareBodies = body
        spareBodyCount += 1
    }

    /// Trailers-Only: one HEADERS frame with END_STREAM carrying the status.
    func respondError(_ stream: GRPCStream, _ status: GRPCStatus) {
        guard let session else { return }
        switch stream.machine.end() {
        case .none:
            return
        case .trailers:
            // A streaming call that already sent messages ends with trailers.
            finishStreaming(stream, status)
            return
        case .trailersOnly:
            break
        }
        stream.finalStatus = status.code.rawValue
        endStreamingWork(stream)
        stream.deadlineTimer?.cancel()
        stream.deadlineTimer = nil
        releaseBuffered(stream)
        withStatusHeaders(status, prefix: true) { headers, count in
            do throws(HTTP2SessionError) {
                try injectedSubmissionFault()
                try session.submitResponse(streamID: stream.id, headers: headers, count: count, body: nil)
            } catch {
                resetAfterFailedResponse(stream, error)
            }
        }
    }

    /// Calls `body` with the `grpc-status` (and `grpc-message`) fields, after
    /// the response prefix when `prefix` (Trailers-Only) or alone (trailers).
    func withStatusHeaders<R>(
        _ status: GRPCStatus, prefix: Bool, _ body: (UnsafePointer<nghttp2_nv>, Int) -> R
    ) -> R {
        var headers: [nghttp2_nv] = prefix ? (0..<StaticHeaders.okResponseCount).map { StaticHeaders.okResponse[$0] } : []
        let code = status.code.rawValue
        var statusValue = Array(String(code).utf8)
        var message = Array(GRPCPercentEncoding.encode(
            GRPCStatus.truncated(status.message, toUTF8Bytes: shared.configuration.maxStatusMessageBytes)).utf8)
        return statusValue.withUnsafeMutableBufferPointer { statusBytes in
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
                return headers.withUnsafeBufferPointer { body($0.baseAddress!, $0.count) }
            }
        }
    }

    /// A plain HTTP answer to a request that is not gRPC, with a short text body.
    func respondHTTP(_ stream: GRPCStream, _ headers: UnsafeMutablePointer<nghttp2_nv>, count: Int, body text: [UInt8]) {
        guard let session, stream.machine.end() == .trailersOnly else { return }
        releaseBuffered(stream)
        let body = text.isEmpty ? nil : HTTP2OutboundBody(text)
        stream.responseBody = body
        do throws(HTTP2SessionError) {
            try injectedSubmissionFault()
            try session.submitResponse(streamID: stream.id, headers: headers, count: count, body: body)
        } catch {
            resetAfterFailedResponse(stream, error)
        }
    }

    /// A response nghttp2 would not take still ends the stream: RST_STREAM
    /// (INTERNAL_ERROR), so the client sees an error and the call is not left
    /// counted in flight. When even that fails the connection is closed, but
    /// never from here: this runs inside nghttp2's callbacks (mem_recv), and
    /// closing the channel runs `channelInactive` at once, which would free
    /// the streams nghttp2 still points at. The state goes to closing (no
    /// more input is read) and the close happens on the next flush, after
    /// nghttp2 has returned.
    func resetAfterFailedResponse(_ stream: GRPCStream, _ error: HTTP2SessionError) {
        guard let session else { return }
        logger.warning("response not submitted; resetting the stream", metadata: [
            "stream": "\(stream.id)", "error": "\(error)",
        ])
        do throws(HTTP2SessionError) {
            try injectedSubmissionFault()
            try session.submitRSTStream(streamID: stream.id, errorCode: NGHTTP2_INTERNAL_ERROR)
        } catch {
            logger.error("RST_STREAM not submitted; closing the connection", metadata: ["error": "\(error)"])
            state.close()
            scheduleFlush()
        }
    }

    /// The plain HTTP answer of a request that is not a gRPC call, once its
    /// request ended (or, `ended` false, once its time to arrive ran out).
    func respondPending(_ stream: GRPCStream, _ answer: GRPCStream.PendingAnswer, ended: Bool = true) {
        stream.pendingAnswer = nil
        switch answer {
        case .plain(let answer):
            respondPlain(stream, answer)
        case .plainCall(let call):
            let body = stream.plainBody
            stream.plainBody = []
            guard ended else {
                let refusal = shared.configuration.plainCalls?.refusal(GRPCStatus(
                    .deadlineExceeded, "request not received within \(shared.configuration.requestReceiveTimeout)"))
                respondPlain(stream, refusal ?? GRPCPlainAnswer(status: 408, contentType: "text/plain", body: []))
                return
            }
            stream.machine.handlerStarted()
            let loop = eventLoop
            let bound = NIOLoopBound(stream, eventLoop: loop)
            call(body, remoteAddress, loop).hop(to: loop).whenComplete { [self] result in
                let stream = bound.value
                guard stream.machine.handlerFinished(), session != nil else { return }
                switch result {
                case .success(let answer): respondPlain(stream, answer)
                case .failure: respondPlain(stream, GRPCPlainAnswer(status: 500, contentType: "text/plain", body: []))
                }
                scheduleFlush()
            }
        case .notPost:
            respondHTTP(stream, StaticHeaders.status405, count: StaticHeaders.status405Count,
                        body: stream.isHead ? [] : HTTPAnswer.notPost)
        case .notGRPC:
            respondHTTP(stream, StaticHeaders.status415, count: StaticHeaders.status415Count, body: HTTPAnswer.notGRPC)
        }
    }

    /// A plain call's answer (``GRPCPlainCalls``): status, content type and length, body.
    func respondPlain(_ stream: GRPCStream, _ answer: GRPCPlainAnswer) {
        guard let session, stream.machine.end() == .trailersOnly else { return }
        releaseBuffered(stream)
        let body = answer.body.isEmpty ? nil : HTTP2OutboundBody(answer.body)
        stream.responseBody = body
        let headers = [
            (name: ":status", value: String(answer.status)), (name: "content-type", value: answer.contentType),
            (name: "content-length", value: String(answer.body.count)),
        ]
        NGHTTP2Headers.with(headers) { list, count in
            do throws(HTTP2SessionError) {
                try injectedSubmissionFault()
                try session.submitResponse(streamID: stream.id, headers: list, count: count, body: body)
            } catch {
                resetAfterFailedResponse(stream, error)
            }
        }
    }

    /// Debug builds: a submission fails when a test asked for it (`GRPCTestFaults`).
    @inline(__always)
    func injectedSubmissionFault() throws(HTTP2SessionError) {
        #if DEBUG
        if shared.testFaults.failSubmissions.load(ordering: .relaxed) {
            throw HTTP2SessionError("injected submission fault", NGHTTP2_ERR_NOMEM.rawValue)
        }
        #endif
    }
}

/// The text bodies of answers to requests that are not gRPC.
enum HTTPAnswer {
    static let notPost = Array("""
        This is a gRPC server (Herald): use a gRPC client (grpcurl, grpcio, grpc-go, …) \
        over HTTP/2; gRPC calls are POST requests with content-type application/grpc.

        """.utf8)
    static let notGRPC = Array("""
        This is a gRPC server (Herald): use a gRPC client (grpcurl, grpcio, grpc-go, …); \
        requests must have content-type application/grpc.

        """.utf8)
}
