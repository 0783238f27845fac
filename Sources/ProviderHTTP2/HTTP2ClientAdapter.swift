public import HeraldPrimitives

/// What one provider (APNs, FCM, the OAuth token endpoint) adds to the shared
/// HTTP/2 pool: the credential a stream goes out with, the response header it
/// keeps, how an answer is read, and when an answer retires its connection.
/// The pool is generic over it (no existential dispatch per request).
@usableFromInline
package protocol HTTP2ClientAdapter: Sendable {
    /// What the caller gets for one answered request.
    associatedtype Response: Sendable
    /// The per-stream credential (e.g. APNs' provider token), kept with the
    /// stream so the answer can retire it.
    associatedtype Credential: Sendable

    /// The one response header the answer needs besides `:status` (lowercase).
    static var keptHeader: StaticString { get }
    /// Values of ``keptHeader`` longer than this are ignored.
    static var keptHeaderMaximumBytes: Int { get }

    /// The credential for a stream starting now, nil when the request carries
    /// its own. Throws ``HTTP2ClientError/credentials(_:)`` when none can be made.
    func credential(now: Timestamp) throws(HTTP2ClientError) -> Credential?
    /// The header that carries `credential`.
    func header(for credential: Credential) -> (name: String, value: String)
    /// Reads one answer (on the connection's event loop); `retireConnection`
    /// true when the connection must take no more streams (e.g. APNs'
    /// ExpiredProviderToken: the retry opens a fresh connection and token).
    func response(to answer: HTTP2ClientAnswer, credential: Credential?) -> (response: Response, retireConnection: Bool)
}

/// Called once a request has a stream to go on: record, then call `done`
/// (nil: recorded) from any thread; the bytes wait for it.
@usableFromInline
package typealias HTTP2HandOverHook = @Sendable (_ done: @escaping @Sendable ((any Error)?) -> Void) -> Void

/// One HTTP/2 POST the pool sends.
@usableFromInline
package struct HTTP2ClientRequest: Sendable {
    /// `:path`.
    package var path: String
    /// Regular headers (lowercase names); the pool adds the pseudo-headers,
    /// the adapter's credential and content-length.
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]
    /// Give up (``HTTP2ClientError/deadlineExceeded``) when this passes, queued or in flight.
    package var deadline: Timestamp?
    /// Called once the request has a stream to go on; written only after `done`.
    package var willHandOver: HTTP2HandOverHook?

    package init(
        path: String, headers: [(name: String, value: String)], body: [UInt8], deadline: Timestamp? = nil,
        willHandOver: HTTP2HandOverHook? = nil
    ) {
        self.path = path
        self.headers = headers
        self.body = body
        self.deadline = deadline
        self.willHandOver = willHandOver
    }
}

/// What came back for one request. Bodies beyond ``maximumBody`` are cut (and marked).
@usableFromInline
package struct HTTP2ClientAnswer: Sendable, Equatable {
    package static let maximumBody = 64 * 1024

    package var status: Int
    /// The adapter's ``HTTP2ClientAdapter/keptHeader``, if the answer had it.
    package var keptHeader: String?
    package var body: [UInt8]
    package var bodyTruncated = false

    package init(status: Int, keptHeader: String?, body: [UInt8], bodyTruncated: Bool = false) {
        self.status = status
        self.keptHeader = keptHeader
        self.body = body
        self.bodyTruncated = bodyTruncated
    }
}
