import HTTP2Core
public import NIOCore

/// A request handed to a slot, with how to complete it. Handed to the slot's
/// event loop once, then touched only there.
///
/// Not generic: the caller's typed promise and the adapter's reading of the
/// answer live in ``complete``, a closure made by ``HTTP2ClientPool/send(_:)``
/// (inlinable, so specialized in the adapter's module).
@usableFromInline
package final class HTTP2PendingRequest: @unchecked Sendable {
    /// Where the request is.
    enum Phase: Equatable {
        /// In the slot's queue (or being handed over), not written.
        case queued
        /// The caller's ``HTTP2ClientRequest/willHandOver`` finished for this
        /// attempt: the request may be written.
        case handOverRecorded
        /// Written on stream `id` of ``connection``.
        case onStream(Int32)
        /// Answered or failed; nothing more happens to it.
        case completed
    }

    let request: HTTP2ClientRequest
    let eventLoop: any EventLoop
    /// Completes the caller's promise, once, on `eventLoop`; for an answer,
    /// returns whether it retires its connection (the adapter's reading).
    private let complete: @Sendable (HTTP2RequestOutcome) -> Bool
    /// Fires the deadline (queued or in flight), on the pool's clock.
    var deadlineTimer: ProviderTimer?
    private(set) var phase = Phase.queued
    /// The connection of ``Phase/onStream(_:)``, so a cancelled caller can withdraw it.
    private(set) weak var connection: HTTP2ClientConnection?

    /// A request for the slot on `eventLoop`; `complete` is called once, on that loop.
    @usableFromInline
    package init(request: HTTP2ClientRequest, eventLoop: any EventLoop, complete: @escaping @Sendable (HTTP2RequestOutcome) -> Bool) {
        self.request = request
        self.eventLoop = eventLoop
        self.complete = complete
    }

    var completed: Bool { phase == .completed }

    /// The caller recorded the hand-over; ignored once completed.
    func handOverWasRecorded() {
        assertInLoop()
        switch phase {
        case .queued: phase = .handOverRecorded
        case .completed: break
        case .handOverRecorded, .onStream: assertionFailure("hand-over recorded while \(phase)")
        }
    }

    /// Written on `streamID` of `connection`.
    func written(on connection: HTTP2ClientConnection, streamID: Int32) {
        assertInLoop()
        switch phase {
        case .queued, .handOverRecorded:
            phase = .onStream(streamID)
            self.connection = connection
        case .onStream, .completed:
            assertionFailure("written while \(phase)")
        }
    }

    /// Hands `answer` to the caller (the adapter reads it); true when the
    /// adapter says the answer retires its connection. Ignored (false) once completed.
    func succeed(_ answer: HTTP2ClientAnswer, credential: (any Sendable)?) -> Bool {
        assertInLoop()
        guard phase != .completed else { return false }
        phase = .completed
        deadlineTimer?.cancel()
        return complete(.answered(answer, credential: credential))
    }

    func fail(_ error: HTTP2ClientError) {
        assertInLoop()
        guard phase != .completed else { return }
        phase = .completed
        deadlineTimer?.cancel()
        _ = complete(.failed(error))
    }

    private func assertInLoop() {
        eventLoop.assertInEventLoop()
    }
}

/// Per-stream state of one request in flight (on the connection's loop).
final class HTTP2StreamState {
    let pending: HTTP2PendingRequest
    /// The body as nghttp2's DATA source (kept alive until the stream closes).
    let payload: HTTP2OutboundBody
    var status = 0
    var keptHeader: String?
    var body: [UInt8] = []
    var truncated = false
    /// Reset by us: why the caller gets (deadline, timeout or cancellation).
    var abandonedWith: HTTP2ClientError?
    /// The adapter's credential the stream went out with (type-erased).
    let credential: (any Sendable)?

    init(pending: HTTP2PendingRequest, credential: (any Sendable)?) {
        self.pending = pending
        self.credential = credential
        self.payload = HTTP2OutboundBody(pending.request.body)
    }

    /// Keeps DATA up to ``HTTP2ClientAnswer/maximumBody``; marks the rest cut.
    func append(_ bytes: UnsafeRawBufferPointer) {
        let room = HTTP2ClientAnswer.maximumBody - body.count
        if bytes.count <= room {
            body.append(contentsOf: bytes)
        } else {
            body.append(contentsOf: bytes.prefix(max(room, 0)))
            truncated = true
        }
    }

    var answer: HTTP2ClientAnswer {
        HTTP2ClientAnswer(status: status, keptHeader: keptHeader, body: body, bodyTruncated: truncated)
    }
}
