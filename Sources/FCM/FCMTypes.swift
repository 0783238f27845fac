public import HeraldPrimitives

/// One FCM HTTP v1 send: the body Herald rendered, for one project.
public struct FCMRequest: Sendable {
    /// The Firebase project (`/v1/projects/{projectID}/messages:send`).
    public var projectID: String
    /// For logs and per-token bookkeeping; the body already holds `message.token`.
    public var deviceToken: String
    /// The full JSON body `{"message":{...}}` exactly as Herald rendered it.
    public var body: [UInt8]
    /// Past it: ``FCMError/deadlineExceeded`` (no further attempts, no waits beyond it).
    public var deadline: Timestamp?
    /// No client-side retries (revokes); a 401 token refresh and a refused stream still go again.
    public var singleAttempt: Bool
    /// Called just before the request's HEADERS are written to a connection
    /// (every attempt, once the access token, the project's rate bucket and
    /// a connection with room are ready): the caller makes the hand-over
    /// durable, then calls `done` (from any thread); the bytes wait for it.
    /// An error fails the request with ``FCMError/handOverNotRecorded(_:)``,
    /// unsent. As APNs' `APNsRequest.willHandOver`.
    public var willHandOver: FCMHandOverHook?

    public init(
        projectID: String, deviceToken: String, body: [UInt8], deadline: Timestamp? = nil, singleAttempt: Bool = false,
        willHandOver: FCMHandOverHook? = nil
    ) {
        self.projectID = projectID
        self.deviceToken = deviceToken
        self.body = body
        self.deadline = deadline
        self.singleAttempt = singleAttempt
        self.willHandOver = willHandOver
    }
}

/// See ``FCMRequest/willHandOver``: record, then call `done` (nil: recorded).
public typealias FCMHandOverHook = @Sendable (_ done: @escaping @Sendable ((any Error)?) -> Void) -> Void

/// FCM's `errorCode` (the `FcmError` detail), plus `UNAUTHENTICATED` for a
/// 401 still refused after the one token refresh.
public enum FCMErrorCode: String, Sendable, Hashable {
    case unspecified = "UNSPECIFIED_ERROR"
    case invalidArgument = "INVALID_ARGUMENT"
    case unregistered = "UNREGISTERED"
    case senderIDMismatch = "SENDER_ID_MISMATCH"
    case quotaExceeded = "QUOTA_EXCEEDED"
    case unavailable = "UNAVAILABLE"
    case `internal` = "INTERNAL"
    case thirdPartyAuthError = "THIRD_PARTY_AUTH_ERROR"
    case unauthenticated = "UNAUTHENTICATED"
}

/// FCM's answer to one request (the final attempt's).
public struct FCMResponse: Sendable, Equatable {
    /// HTTP status of the final attempt.
    public var status: Int
    /// `projects/P/messages/ID` on 200.
    public var messageName: String?
    /// nil on 200.
    public var errorCode: FCMErrorCode?
    /// `google.rpc.Status.message` (names the field for INVALID_ARGUMENT), at most 512 bytes.
    public var errorMessage: String?
    /// The final attempt's `Retry-After`, when given.
    public var retryAfter: Duration?
    /// Requests sent for this answer, retries included.
    public var attempts: Int

    public init(
        status: Int, messageName: String? = nil, errorCode: FCMErrorCode? = nil, errorMessage: String? = nil,
        retryAfter: Duration? = nil, attempts: Int = 1
    ) {
        self.status = status
        self.messageName = messageName
        self.errorCode = errorCode
        self.errorMessage = errorMessage
        self.retryAfter = retryAfter
        self.attempts = attempts
    }

    public var isSuccess: Bool { status == 200 }
}

/// Why a send produced no ``FCMResponse``.
public enum FCMError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The request's deadline passed (queued, rate-limited, in flight or between retries).
    case deadlineExceeded
    /// No connection to FCM, or it failed with the request in flight and retries ran out.
    case connectionFailed(String)
    /// The service-account key is unusable (names the field).
    case invalidServiceAccount(String)
    /// No access token: says why (invalid_grant, unreachable, bad answer).
    case tokenEndpoint(String)
    /// The caller could not record the hand-over; the request was not sent.
    case handOverNotRecorded(String)
    /// The client was shut down.
    case shutdown

    public var description: String {
        switch self {
        case .deadlineExceeded: "deadline exceeded"
        case .connectionFailed(let why): "FCM connection failed: \(why)"
        case .invalidServiceAccount(let why): "invalid service account: \(why)"
        case .tokenEndpoint(let why): "OAuth token endpoint: \(why)"
        case .handOverNotRecorded(let why): "hand-over not recorded, not sent: \(why)"
        case .shutdown: "FCM client shut down"
        }
    }
}

/// Where the client sends messages.
public struct FCMEndpoint: Hashable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `fcm.googleapis.com:443`.
    public static let production = FCMEndpoint(host: "fcm.googleapis.com", port: 443)

    public var description: String { "\(host):\(port)" }
}

/// What operators see of a client.
public struct FCMPoolStatus: Sendable, Equatable {
    public var endpoint: FCMEndpoint
    /// Connections established (ready or draining).
    public var connectionsOpen: Int
    /// Streams waiting for a response.
    public var streamsInFlight: Int
    /// The last connection-level or token-endpoint error, if any.
    public var lastError: String?
    /// Access tokens obtained from the token endpoint so far.
    public var accessTokensMinted: Int

    public init(endpoint: FCMEndpoint, connectionsOpen: Int = 0, streamsInFlight: Int = 0, lastError: String? = nil, accessTokensMinted: Int = 0) {
        self.endpoint = endpoint
        self.connectionsOpen = connectionsOpen
        self.streamsInFlight = streamsInFlight
        self.lastError = lastError
        self.accessTokensMinted = accessTokensMinted
    }
}
