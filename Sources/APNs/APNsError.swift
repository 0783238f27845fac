/// Why a send did not produce an APNs response.
public enum APNsError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The request's deadline passed (queued, in flight, or between retries).
    case deadlineExceeded
    /// The connection could not be established (TCP, TLS, ALPN). `retryable` is
    /// false for certificate and configuration problems.
    case connectFailed(String, retryable: Bool)
    /// The connection closed with the request in flight (it may have been delivered).
    case connectionClosed(String)
    /// The server refused the stream before processing it (GOAWAY, REFUSED_STREAM): safe to resend.
    case streamRefused
    /// The server reset the stream with this HTTP/2 error code.
    case streamReset(UInt32)
    /// No answer within ``APNsClientConfiguration/responseTimeout``: the stream
    /// was reset (APNs may have delivered it; the client retries).
    case responseTimeout
    /// The device token is backing off after 429 TooManyRequests until this moment.
    case deviceBackingOff(untilEpochSeconds: Double)
    /// Invalid credentials or configuration (key, certificate, CA file).
    case configuration(String)
    /// All attempts failed; the last error is attached.
    case retriesExhausted(String)
    /// The caller could not record the hand-over; the request was not sent.
    case handOverNotRecorded(String)
    /// The client was shut down.
    case shutdown
    /// The caller's task was cancelled (the request was withdrawn; if it was
    /// in flight its stream was reset, but APNs may have delivered it).
    case cancelled

    public var description: String {
        switch self {
        case .deadlineExceeded: "deadline exceeded"
        case .connectFailed(let message, _): "connect failed: \(message)"
        case .connectionClosed(let message): "connection closed: \(message)"
        case .streamRefused: "stream refused"
        case .streamReset(let code): "stream reset (HTTP/2 error \(code))"
        case .responseTimeout: "no response within the response timeout"
        case .deviceBackingOff(let until): "device token backing off until \(until)"
        case .configuration(let message): "configuration: \(message)"
        case .retriesExhausted(let message): "retries exhausted: \(message)"
        case .handOverNotRecorded(let why): "hand-over not recorded, not sent: \(why)"
        case .shutdown: "client shut down"
        case .cancelled: "cancelled"
        }
    }
}
