import CInterop
import HTTP2Core
import NIOCore

/// Running a call once its request is complete, and its deadline.
extension GRPCConnection {
    /// END_STREAM from the client: run the handler.
    func requestEnded(_ stream: GRPCStream) {
        if let answer = stream.pendingAnswer {
            respondPending(stream, answer)
            return
        }
        if stream.hasInbound {
            inboundEnded(stream)
            return
        }
        guard stream.phase == .receiving, stream.counted else { return }
        // The request stays counted against the buffers until the call is
        // answered: a handler still running holds its bytes.
        guard finishDeframing(stream) else { return }
        guard let message = stream.message, let route = stream.route, let path = stream.path else {
            respondError(stream, GRPCStatus(.unimplemented, "unary method requires exactly one request message, received none"))
            return
        }
        stream.message = nil
        if let deadline = stream.deadlineBox, deadline.hasPassed {
            respondError(stream, GRPCStatus(.deadlineExceeded, "deadline exceeded before the call started"))
            return
        }
        let request = GRPCRequest(
            path: path, metadata: stream.metadata, message: message, deadlineBox: stream.deadlineBox,
            remoteAddress: remoteAddress)
        if shared.annotate != nil { annotate(stream, request) }
        guard let handler = route.handler else {
            startServerStreaming(stream, route, request)
            return
        }
        switch handler {
        case .sync(let body):
            runInline(stream, request, body)
        case .compute(let inlineBytes, let body):
            if request.message.count <= inlineBytes {
                runInline(stream, request, body)
            } else {
                // The compute threads' queue, bounds and checks are the deferred call's.
                startDeferred(stream, request, inlineBytes: inlineBytes) { request, reply in
                    reply.answer(Result { try body(request) })
                }
            }
        case .async(let body):
            stream.machine.handlerStarted()
            let loop = eventLoop
            let bound = NIOLoopBound(stream, eventLoop: loop)
            stream.task = Task { [self] in
                let result: Result<[UInt8], any Error>
                do {
                    result = .success(try await body(request))
                } catch {
                    result = .failure(error)
                }
                loop.execute { self.asyncFinished(bound.value, result) }
            }
        case .deferred(let inlineBytes, let body):
            startDeferred(stream, request, inlineBytes: inlineBytes, body)
        }
    }

    /// A `.deferred` call (and a large `.compute` one): started on the loop,
    /// or past `inlineBytes` queued for the compute threads (bounded; skipped
    /// if cancelled or past its deadline by the time a thread takes it);
    /// answered through its `GRPCReply` from wherever its wait ended, the
    /// answer sent on this loop. Cancelled (the reply's `onCancel`) on
    /// deadline, RST_STREAM or connection loss.
    func startDeferred(
        _ stream: GRPCStream, _ request: GRPCRequest, inlineBytes: Int,
        _ body: @escaping @Sendable (GRPCRequest, GRPCReply) throws -> Void
    ) {
        stream.machine.handlerStarted()
        let cancellation = GRPCCallCancellation()
        stream.cancellation = cancellation
        let loop = eventLoop
        let bound = NIOLoopBound(stream, eventLoop: loop)
        let reply = GRPCReply(loop: loop, cancellation: cancellation) { [self] result in
            if loop.inEventLoop {
                asyncFinished(bound.value, result)
            } else {
                loop.execute { self.asyncFinished(bound.value, result) }
            }
        }
        if request.message.count <= inlineBytes {
            do { try body(request, reply) } catch { reply.answer(.failure(error)) }
            return
        }
        let shared = self.shared
        let limit = shared.configuration.maxQueuedComputeCalls
        guard shared.computeCalls.wrappingAdd(1, ordering: .relaxed).newValue <= limit else {
            shared.computeCalls.subtract(1, ordering: .relaxed)
            reply.answer(.failure(GRPCStatus(.resourceExhausted,
                "server busy: \(limit) large calls already queued (maxQueuedComputeCalls); retry later")))
            return
        }
        shared.computePool.submit { poolState in
            defer { shared.computeCalls.subtract(1, ordering: .relaxed) }
            ComputeThread.lowerPriority()
            if poolState != .active || cancellation.isCancelled {
                reply.answer(.failure(CancellationError()))
            } else if let deadline = request.deadlineBox, deadline.hasPassed {
                reply.answer(.failure(GRPCStatus(.deadlineExceeded, "deadline exceeded while queued")))
            } else {
                do { try body(request, reply) } catch { reply.answer(.failure(error)) }
            }
        }
    }

    /// Out of line: the closure capturing the request made `requestEnded`
    /// copy the request on every unary call too.
    @inline(never)
    func startServerStreaming(_ stream: GRPCStream, _ route: GRPCRoute, _ request: GRPCRequest) {
        if case .serverStreaming(let body) = route.streaming {
            startStreaming(stream) { writer in try await body(request, writer) }
        }
    }

    func runInline(_ stream: GRPCStream, _ request: GRPCRequest, _ body: (GRPCRequest) throws -> [UInt8]) {
        do {
            respondOK(stream, try body(request))
        } catch {
            // The stream's path (the same string): naming the request's here
            // made every call copy the request.
            respondError(stream, status(for: error, path: stream.path ?? ""))
        }
    }

    func asyncFinished(_ stream: GRPCStream, _ result: Result<[UInt8], any Error>) {
        assertOnLoop()
        stream.task = nil
        // Answered: ending the stream later is not a cancellation.
        stream.cancellation = nil
        guard stream.machine.handlerFinished(), session != nil else { return }
        switch result {
        case .success(let response): respondOK(stream, response)
        case .failure(let error): respondError(stream, status(for: error, path: stream.path ?? ""))
        }
        scheduleFlush()
    }

    func deadlineExpired(_ stream: GRPCStream) {
        assertOnLoop()
        stream.deadlineTimer = nil
        guard stream.machine.deadlineExpired(), session != nil else { return }
        stream.task?.cancel()
        stream.task = nil
        stream.cancellation?.cancel()
        stream.cancellation = nil
        respondError(stream, GRPCStatus(.deadlineExceeded, "deadline exceeded"))
        flushOutput()
    }


    func streamClosed(_ stream: GRPCStream) {
        streams.remove(stream)
        finishStream(stream)
        recycleBody(stream)
    }

    func finishStream(_ stream: GRPCStream) {
        _ = stream.machine.closed()
        releaseBuffered(stream)
        stream.task?.cancel()
        stream.task = nil
        stream.cancellation?.cancel()
        stream.cancellation = nil
        // One clock read serves liveness and the observer's duration.
        let now = NIODeadline.now()
        // A background call left the idle count when its handler started.
        if session != nil, !stream.isBackground, let turnedIdle = liveness.callClosed(now: now) {
            scheduleLivenessTick(at: turnedIdle)
        }
        stream.deadlineTimer?.cancel()
        stream.deadlineTimer = nil
        if stream.unauthenticated { releaseUnauthenticatedSlot(stream) }
        endStreamingWork(stream)
        if stream.counted {
            stream.counted = false
            counters.rpcFinished()
            reportFinished(stream, now: now)
        }
    }

    /// Gives back everything the stream's request holds, and drops the bytes.
    func releaseBuffered(_ stream: GRPCStream) {
        if stream.bufferedBytes != 0 {
            bufferedRequestBytes -= stream.bufferedBytes
            releaseShared(stream, stream.bufferedBytes)
            stream.bufferedBytes = 0
        }
        if stream.phase != .receiving {
            stream.message = nil
            stream.deframer.discard()
        }
    }

    /// After our END_STREAM, a client still sending gets RST_STREAM(NO_ERROR) (PROTOCOL-HTTP2).
    func streamEndSent(streamID: Int32) {
        guard let session else { return }
        if !session.isRemoteClosed(streamID) {
            do { try session.submitRSTStream(streamID: streamID, errorCode: NGHTTP2_NO_ERROR) } catch {
                logger.warning("RST_STREAM(NO_ERROR) not submitted", metadata: ["error": "\(error)"])
            }
        }
    }

}
