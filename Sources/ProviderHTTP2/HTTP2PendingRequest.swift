import HTTP2Core
import NIOCore

/// A request handed to a slot, with how to complete it. Handed to the slot's
/// event loop once, then touched only there.
final class HTTP2PendingRequest<Adapter: HTTP2ClientAdapter>: @unchecked Sendable {
    let request: HTTP2ClientRequest
    let promise: EventLoopPromise<Adapter.Response>
    /// Fires the deadline (queued or in flight), on the pool's clock.
    var deadlineTimer: ProviderTimer?
    private(set) var completed = false
    /// The caller's ``HTTP2ClientRequest/willHandOver`` finished for this
    /// attempt: the request may be written.
    var handOverRecorded = false
    /// Where the request is now, so a cancelled caller can withdraw it.
    weak var connection: HTTP2ClientConnection<Adapter>?
    var streamID: Int32 = 0

    init(request: HTTP2ClientRequest, promise: EventLoopPromise<Adapter.Response>) {
        self.request = request
        self.promise = promise
    }

    func succeed(_ response: Adapter.Response) {
        promise.futureResult.eventLoop.assertInEventLoop()
        guard !completed else { return }
        completed = true
        deadlineTimer?.cancel()
        promise.succeed(response)
    }

    func fail(_ error: HTTP2ClientError) {
        promise.futureResult.eventLoop.assertInEventLoop()
        guard !completed else { return }
        completed = true
        deadlineTimer?.cancel()
        promise.fail(error)
    }
}

/// Per-stream state of one request in flight (on the connection's loop).
final class HTTP2StreamState<Adapter: HTTP2ClientAdapter> {
    let pending: HTTP2PendingRequest<Adapter>
    let credential: Adapter.Credential?
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
