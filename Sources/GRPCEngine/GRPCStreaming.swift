import NIOCore

/// How a registered streaming method runs (register with
/// `GRPCServer.register(_:streaming:admission:)`). Handlers run in a Task,
/// cancelled on RST_STREAM, deadline expiry, connection loss, and on drain
/// once `streamingDrainGrace` has passed.
/// Returning sends `grpc-status: 0`; throwing `GRPCStatus` sends that status.
public enum GRPCStreamingHandler: Sendable {
    /// One request message, any number of responses.
    case serverStreaming(@Sendable (GRPCRequest, GRPCResponseWriter) async throws -> Void)
    /// Request messages as they arrive, responses as the handler writes them.
    case bidirectional(@Sendable (GRPCRequestHead, GRPCRequestMessages, GRPCResponseWriter) async throws -> Void)
}

/// A streaming call's request headers.
public struct GRPCRequestHead: Sendable {
    /// The method path, e.g. `/pkg.Service/Method`.
    public var path: String
    /// Custom request headers.
    public var metadata: GRPCMetadata
    /// When the call must end, from `grpc-timeout`; `nil` without one.
    public var deadline: ContinuousClock.Instant?
    /// The peer, e.g. `127.0.0.1:53422`.
    public var remoteAddress: String?
}

/// Writes a streaming call's response messages.
public struct GRPCResponseWriter: Sendable {
    let call: GRPCStreamingCall

    /// Sends one message. Suspends while the peer is not taking data (HTTP/2
    /// flow control or a full socket); throws `CancellationError` once the
    /// stream is gone (reset, deadline, connection loss, drain).
    public func send(_ message: [UInt8]) async throws {
        try await call.send([message])
    }

    /// Sends `messages` in order as one write: one hop to the connection's
    /// loop and one flush for all of them (a page of events), then
    /// suspends as `send` does while the peer is not taking data.
    public func send(contentsOf messages: [[UInt8]]) async throws {
        guard !messages.isEmpty else { return }
        try await call.send(messages)
    }
}

/// A bidirectional call's request messages, as they arrive. Buffered bytes
/// count against the connection's and the server's request buffers until the
/// handler takes them; a peer that outruns the handler past those budgets gets
/// RESOURCE_EXHAUSTED. Iterate it once.
public struct GRPCRequestMessages: AsyncSequence, Sendable {
    public typealias Element = [UInt8]

    let stream: AsyncThrowingStream<[UInt8], any Error>
    let call: GRPCStreamingCall

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<[UInt8], any Error>.AsyncIterator
        let call: GRPCStreamingCall

        public mutating func next() async throws -> [UInt8]? {
            guard let message = try await base.next() else { return nil }
            call.consumed(message.count)
            return message
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator(), call: call)
    }
}

/// The bridge between a streaming handler's Task and its stream on the
/// connection's loop: the stream is loop-bound, touched only inside
/// `eventLoop.execute`.
final class GRPCStreamingCall: Sendable {
    let connection: GRPCConnection
    private let boundStream: NIOLoopBound<GRPCStream>
    let eventLoop: any EventLoop

    /// On the connection's loop.
    init(connection: GRPCConnection, stream: GRPCStream) {
        self.connection = connection
        self.boundStream = NIOLoopBound(stream, eventLoop: connection.eventLoop)
        self.eventLoop = connection.eventLoop
    }

    /// The stream, on the connection's loop.
    var stream: GRPCStream { boundStream.value }

    func send(_ messages: [[UInt8]]) async throws {
        try Task.checkCancellation()
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            eventLoop.execute { [self] in
                connection.streamingSend(stream, messages, continuation)
            }
        }
    }

    func consumed(_ bytes: Int) {
        eventLoop.execute { [self] in connection.streamingConsumed(stream, bytes) }
    }
}
