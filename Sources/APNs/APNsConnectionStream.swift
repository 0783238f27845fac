import HTTP2Core
import NIOCore

/// A request handed to a connection, with how to complete it.
/// Handed to the slot's event loop once, then touched only there.
final class PendingRequest: @unchecked Sendable {
    let request: APNsRequest
    let promise: EventLoopPromise<APNsResponse>
    /// Fires the deadline (queued or in flight), on the client's clock.
    var deadlineTimer: APNsTimer?
    var completed = false
    /// The caller's ``APNsRequest/willHandOver`` finished for this attempt:
    /// the request may be written.
    var handOverRecorded = false
    /// Where the request is now, so a cancelled caller can withdraw it.
    weak var connection: APNsConnection?
    var streamID: Int32 = 0

    init(request: APNsRequest, promise: EventLoopPromise<APNsResponse>) {
        self.request = request
        self.promise = promise
    }

    func succeed(_ response: APNsResponse) {
        guard !completed else { return }
        completed = true
        deadlineTimer?.cancel()
        promise.succeed(response)
    }

    func fail(_ error: APNsError) {
        guard !completed else { return }
        completed = true
        deadlineTimer?.cancel()
        promise.fail(error)
    }
}

/// Per-stream state of one request in flight.
final class StreamState {
    let pending: PendingRequest
    let token: String?
    /// The payload as nghttp2's DATA source (kept alive until the stream closes).
    let payload: HTTP2OutboundBody
    var status = 0
    var apnsID: String?
    var body: [UInt8] = []
    /// Reset by us: why the caller gets (deadline or cancellation).
    var abandonedWith: APNsError?
    /// Resets the stream when no response came within the response timeout.
    var responseTimer: APNsTimer?

    init(pending: PendingRequest, token: String?) {
        self.pending = pending
        self.token = token
        self.payload = HTTP2OutboundBody(pending.request.payload)
    }
}

/// Events a connection reports to its slot (on the slot's event loop).
protocol APNsConnectionDelegate: AnyObject {
    func connectionReady(_ connection: APNsConnection)
    func connectionHasCapacity(_ connection: APNsConnection)
    func connectionStoppedAccepting(_ connection: APNsConnection)
    func connectionClosed(_ connection: APNsConnection, error: APNsError?, wasReady: Bool)
}
