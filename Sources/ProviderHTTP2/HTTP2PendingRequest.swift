import HTTP2Core
import NIOCore

/// A request handed to a slot, with how to complete it. Handed to the slot's
/// event loop once, then touched only there.
final class HTTP2PendingRequest<Adapter: HTTP2ClientAdapter>: @unchecked Sendable {
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
    let promise: EventLoopPromise<Adapter.Response>
    /// Fires the deadline (queued or in flight), on the pool's clock.
    var deadlineTimer: ProviderTimer?
    private(set) var phase = Phase.queued
    /// The connection of ``Phase/onStream(_:)``, so a cancelled caller can withdraw it.
    private(set) weak var connection: HTTP2ClientConnection<Adapter>?

    init(request: HTTP2ClientRequest, promise: EventLoopPromise<Adapter.Response>) {
        self.request = request
        self.promise = promise
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
    func written(on connection: HTTP2ClientConnection<Adapter>, streamID: Int32) {
        assertInLoop()
        switch phase {
        case .queued, .handOverRecorded:
            phase = .onStream(streamID)
            self.connection = connection
        case .onStream, .completed:
            assertionFailure("written while \(phase)")
        }
    }

    func succeed(_ response: Adapter.Response) {
        assertInLoop()
        guard phase != .completed else { return }
        phase = .completed
        deadlineTimer?.cancel()
        promise.succeed(response)
    }

    func fail(_ error: HTTP2ClientError) {
        assertInLoop()
        guard phase != .completed else { return }
        phase = .completed
        deadlineTimer?.cancel()
        promise.fail(error)
    }

    private func assertInLoop() {
        promise.futureResult.eventLoop.assertInEventLoop()
    }
}

/// Per-stream state of one request in flight (on the connection's loop).
final class HTTP2StreamState<Adapter: HTTP2ClientAdapter> {
    let pending: HTTP2PendingRequest<Adapter>
    /// The body as nghttp2's DATA source (kept alive until the stream closes).
    let payload: HTTP2OutboundBody
    var status = 0
    var keptHeader: String?
    var body: [UInt8] = []
    var truncated = false
    /// Reset by us: why the caller gets (deadline, timeout or cancellation).
    var abandonedWith: HTTP2ClientError?
    /// Resets the stream when no response came within the response timeout.
    var responseTimer: ProviderTimer?
    /// The credential the stream went out with. Last: its size depends on
    /// the adapter, so every field above keeps a fixed offset.
    let credential: Adapter.Credential?

    init(pending: HTTP2PendingRequest<Adapter>, credential: Adapter.Credential?) {
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
