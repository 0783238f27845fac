/// Why a request got no HTTP answer from the pool (one attempt; the
/// provider client decides what to retry).
@usableFromInline
package enum HTTP2ClientError: Error, Sendable, Equatable, CustomStringConvertible {
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
    /// ``HTTP2ClientRequest/willHandOver`` reported an error: not sent.
    case handOverNotRecorded(String)
    /// The adapter could not make the stream's credential: not sent.
    case credentials(String)

    @usableFromInline package var description: String {
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
        case .credentials(let why): "credentials: \(why)"
        }
    }
}
