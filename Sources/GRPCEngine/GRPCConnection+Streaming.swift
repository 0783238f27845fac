import CInterop
import HTTP2Core
import NIOCore

/// Streaming calls: the handler's Task writes through `GRPCResponseWriter`
/// (suspending under backpressure) and, for bidirectional calls, reads
/// `GRPCRequestMessages` fed from DATA frames.
extension GRPCConnection {
    /// A `send` resumes at once while at most this many bytes wait in nghttp2's queue …
    static let streamingHighWater = 64 * 1024
    /// … and a suspended one resumes when the queue is down to this.
    static let streamingLowWater = 16 * 1024

    /// Runs a streaming handler in a Task; its result becomes the trailers.
    func startStreaming(_ stream: GRPCStream, _ body: @escaping @Sendable (GRPCResponseWriter) async throws -> Void) {
        stream.machine.handlerStarted()
        stream.isStreaming = true
        if stream.unauthenticated {
            // A call anyone may hold open (a health watch) is no activity:
            // the connection stays under the idle timeout.
            stream.isBackground = true
            if let turnedIdle = liveness.callClosed(now: .now()) { scheduleLivenessTick(at: turnedIdle) }
        }
        let writer = GRPCResponseWriter(call: GRPCStreamingCall(connection: self, stream: stream))
        let loop = eventLoop
        let bound = NIOLoopBound(stream, eventLoop: loop)
        stream.task = Task { [self] in
            let result: Result<Void, any Error>
            do {
                try await body(writer)
                result = .success(())
            } catch {
                result = .failure(error)
            }
            loop.execute { self.streamingFinished(bound.value, result) }
        }
    }

    /// A bidirectional call starts at END_HEADERS: messages reach the handler as they arrive.
    func startBidirectional(
        _ stream: GRPCStream,
        _ body: @escaping @Sendable (GRPCRequestHead, GRPCRequestMessages, GRPCResponseWriter) async throws -> Void
    ) {
        let (messages, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
        stream.streamingState.open(continuation)
        let head = GRPCRequestHead(
            path: stream.path ?? "", metadata: stream.metadata, deadline: stream.deadline, remoteAddress: remoteAddress)
        let call = GRPCStreamingCall(connection: self, stream: stream)
        let requests = GRPCRequestMessages(stream: messages, call: call)
        startStreaming(stream) { writer in try await body(head, requests, writer) }
    }

    /// DATA of a bidirectional call: whole messages go to the handler; bytes
    /// held (partial and untaken messages) count against the request buffers.
    func inboundData(_ stream: GRPCStream, _ bytes: UnsafeRawBufferPointer) {
        guard stream.phase == .running, stream.counted, let inbound = stream.streaming?.inbound else { return }
        let limit = stream.deframer.maxMessageBytes
        let deframed = deframe(stream, bytes) { compressed, message in
            let message = try inflate(compressed, message, limit: limit)
            stream.inboundQueuedBytes += message.count
            inbound.yield(message)
        }
        guard deframed else { return }
        settleReservation(stream, held: stream.deframer.bufferedBytes + stream.inboundQueuedBytes)
    }

    /// END_STREAM of a bidirectional call: the handler's sequence ends.
    func inboundEnded(_ stream: GRPCStream) {
        guard stream.phase == .running, let streaming = stream.streaming, streaming.hasInbound,
              finishDeframing(stream) else { return }
        streaming.takeInbound()?.finish()
    }

    /// The handler took `bytes` of request messages: give them back to the budgets.
    func streamingConsumed(_ stream: GRPCStream, _ bytes: Int) {
        assertOnLoop()
        guard stream.inboundQueuedBytes >= bytes else { return }
        stream.inboundQueuedBytes -= bytes
        releaseReservation(stream, min(bytes, stream.bufferedBytes))
    }

    /// One response message from the handler; the first one sends the response HEADERS.
    func streamingSend(_ stream: GRPCStream, _ messages: [[UInt8]], _ continuation: CheckedContinuation<Void, any Error>) {
        assertOnLoop()
        guard stream.phase == .running, stream.streaming?.waitingWriter == nil, let session else {
            continuation.resume(throwing: CancellationError())
            return
        }
        let body: HTTP2OutboundBody
        if let existing = stream.responseBody {
            body = existing
        } else {
            guard stream.machine.startResponse() else {
                continuation.resume(throwing: CancellationError())
                return
            }
            body = HTTP2OutboundBody()
            stream.responseBody = body
            do {
                try session.submitResponse(
                    streamID: stream.id, headers: StaticHeaders.okResponse, count: StaticHeaders.okResponseCount,
                    body: body)
            } catch {
                resetAfterFailedResponse(stream, error)
                continuation.resume(throwing: CancellationError())
                return
            }
        }
        do {
            for message in messages { try session.append(message, prefixed: true, to: body, streamID: stream.id) }
        } catch {
            resetAfterFailedResponse(stream, error)
            continuation.resume(throwing: CancellationError())
            return
        }
        scheduleFlush()
        if body.pendingBytes <= Self.streamingHighWater, channel.isWritable {
            continuation.resume()
        } else {
            stream.streamingState.waitingWriter = continuation
            waitingWriters.append(stream)
        }
    }

    /// After output moved or the channel became writable: resumes writers whose queue drained.
    func wakeWriters() {
        guard !waitingWriters.isEmpty, channel.isWritable else { return }
        waitingWriters.removeAll { stream in
            guard let streaming = stream.streaming, let continuation = streaming.waitingWriter else { return true }
            guard (stream.responseBody?.pendingBytes ?? 0) <= Self.streamingLowWater else { return false }
            streaming.waitingWriter = nil
            continuation.resume()
            return true
        }
    }

    /// The handler returned or threw: trailers with its status.
    func streamingFinished(_ stream: GRPCStream, _ result: Result<Void, any Error>) {
        assertOnLoop()
        stream.task = nil
        guard stream.machine.handlerFinished(), session != nil else { return }
        let status: GRPCStatus
        switch result {
        case .success:
            status = GRPCStatus(.ok, "")
        case .failure(let error) where error is CancellationError && state.state != .active:
            status = GRPCStatus(.unavailable, "server is shutting down")
        case .failure(let error):
            status = self.status(for: error, path: stream.path ?? "")
        }
        respondError(stream, status)  // Trailers-Only, or trailers after the messages
        scheduleFlush()
    }

    /// Ends a streaming response that sent HEADERS (the machine said `.trailers`):
    /// queued messages, then trailers.
    func finishStreaming(_ stream: GRPCStream, _ status: GRPCStatus) {
        guard let session, let body = stream.responseBody else { return }
        stream.finalStatus = status.code.rawValue
        stream.deadlineTimer?.cancel()
        stream.deadlineTimer = nil
        releaseBuffered(stream)
        endStreamingWork(stream)
        let trailers: HTTP2OutboundBody.Trailers
        if status.code == .ok {
            trailers = .staticList(StaticHeaders.okTrailers, count: 1)
        } else {
            var fields = [(name: "grpc-status", value: String(status.code.rawValue))]
            let message = GRPCPercentEncoding.encode(
                GRPCStatus.truncated(status.message, toUTF8Bytes: shared.configuration.maxStatusMessageBytes))
            if !message.isEmpty { fields.append((name: "grpc-message", value: message)) }
            trailers = .owned(fields)
        }
        do {
            try session.finish(body, trailers: trailers, streamID: stream.id)
        } catch {
            resetAfterFailedResponse(stream, error)
        }
    }

    /// The call is over (answered, reset or lost): a waiting writer and the
    /// handler's request sequence learn it.
    func endStreamingWork(_ stream: GRPCStream) {
        stream.streaming?.cancel()
    }

    /// Drain, after the grace: streaming handlers still running are cancelled
    /// and end with UNAVAILABLE unless they return.
    func streamsDraining() {
        assertOnLoop()
        for stream in streams.all where stream.isStreaming && stream.phase == .running {
            stream.task?.cancel()
        }
    }

    /// The idle timeout fired with only background calls open (unauthenticated
    /// streaming calls): they end with UNAVAILABLE before the GOAWAY. True
    /// when there were any.
    @discardableResult
    func endBackgroundCalls() -> Bool {
        let background = streams.all.filter(\.isBackground)
        for stream in background {
            endStreamingCall(stream, GRPCStatus(.unavailable,
                "connection idle for \(shared.configuration.idleTimeout) with only calls without a token open "
                    + "(idleTimeout); call again"))
        }
        return !background.isEmpty
    }
}
