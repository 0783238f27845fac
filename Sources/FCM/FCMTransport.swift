import HTTP2Core
import HeraldPrimitives
import NIOCore

/// One HTTP/2 request the pool sends (a message or a token request).
struct FCMHTTPRequest: Sendable {
    var path: String
    /// Regular headers (lowercase names); the pool adds the pseudo-headers and content-length.
    var headers: [(name: String, value: String)]
    var body: [UInt8]
    var deadline: Timestamp?
    /// ``FCMRequest/willHandOver``: the pool calls it once the request has a stream to go on.
    var willHandOver: FCMHandOverHook?
}

/// What came back for one request. Bodies beyond ``maximumBody`` are cut (and marked).
struct FCMHTTPAnswer: Sendable, Equatable {
    static let maximumBody = 64 * 1024

    var status: Int
    var retryAfter: String?
    var body: [UInt8]
    var bodyTruncated = false
}

/// Why a request got no HTTP answer.
enum FCMTransportError: Error, Sendable, Equatable, CustomStringConvertible {
    case deadlineExceeded
    /// TCP, TLS or ALPN failed; `retryable` false for certificate and configuration problems.
    case connectFailed(String, retryable: Bool)
    /// The connection ended with the request in flight (it may have been processed).
    case connectionClosed(String)
    /// Never processed (GOAWAY above last-stream-id, REFUSED_STREAM): safe to resend.
    case streamRefused
    case streamReset(UInt32)
    /// No answer within the per-attempt timeout (the stream was reset).
    case responseTimeout
    case shutdown
    /// The caller's task was cancelled (the stream, if any, was reset).
    case cancelled
    /// ``FCMHTTPRequest/willHandOver`` reported an error: not sent.
    case handOverNotRecorded(String)

    var description: String {
        switch self {
        case .deadlineExceeded: "deadline exceeded"
        case .connectFailed(let why, _): "connect failed: \(why)"
        case .connectionClosed(let why): "connection closed: \(why)"
        case .streamRefused: "stream refused"
        case .streamReset(let code): "stream reset (HTTP/2 error \(code))"
        case .responseTimeout: "no response within the request timeout"
        case .shutdown: "shut down"
        case .cancelled: "cancelled"
        case .handOverNotRecorded(let why): "hand-over not recorded, not sent: \(why)"
        }
    }
}

/// A request handed to a slot, with how to complete it. Touched only on the slot's event loop.
final class FCMPendingRequest: @unchecked Sendable {
    let request: FCMHTTPRequest
    let promise: EventLoopPromise<FCMHTTPAnswer>
    var deadlineTimer: FCMTimer?
    var completed = false
    /// The caller's ``FCMHTTPRequest/willHandOver`` finished for this attempt: the request may be written.
    var handOverRecorded = false
    weak var connection: FCMConnection?
    var streamID: Int32 = 0

    init(request: FCMHTTPRequest, promise: EventLoopPromise<FCMHTTPAnswer>) {
        self.request = request
        self.promise = promise
    }

    func succeed(_ answer: FCMHTTPAnswer) {
        guard !completed else { return }
        completed = true
        deadlineTimer?.cancel()
        promise.succeed(answer)
    }

    func fail(_ error: FCMTransportError) {
        guard !completed else { return }
        completed = true
        deadlineTimer?.cancel()
        promise.fail(error)
    }
}

/// Per-stream state of one request in flight.
final class FCMStreamState {
    let pending: FCMPendingRequest
    let payload: HTTP2OutboundBody
    var status = 0
    var retryAfter: String?
    var body: [UInt8] = []
    var truncated = false
    var abandonedWith: FCMTransportError?
    var responseTimer: FCMTimer?

    init(pending: FCMPendingRequest) {
        self.pending = pending
        self.payload = HTTP2OutboundBody(pending.request.body)
    }

    func append(_ bytes: UnsafeRawBufferPointer) {
        let room = FCMHTTPAnswer.maximumBody - body.count
        if bytes.count <= room {
            body.append(contentsOf: bytes)
        } else {
            body.append(contentsOf: bytes.prefix(max(room, 0)))
            truncated = true
        }
    }
}

/// Events a connection reports to its slot (on the slot's event loop).
protocol FCMConnectionDelegate: AnyObject {
    func connectionReady(_ connection: FCMConnection)
    func connectionHasCapacity(_ connection: FCMConnection)
    func connectionStoppedAccepting(_ connection: FCMConnection)
    func connectionClosed(_ connection: FCMConnection, error: FCMTransportError?, wasReady: Bool)
}
