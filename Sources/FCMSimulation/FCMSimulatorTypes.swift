public import HeraldPrimitives

/// A service account the simulator's token endpoint knows: assertions must
/// carry `kid` = `privateKeyID` and `iss` = `clientEmail`, and verify against
/// `publicKeyPEM` (SubjectPublicKeyInfo, `BEGIN PUBLIC KEY`). Access tokens
/// minted for it may send to `projectID` only.
public struct FCMSimulatedAccount: Sendable {
    public var projectID: String
    public var clientEmail: String
    public var privateKeyID: String
    public var publicKeyPEM: String

    public init(projectID: String, clientEmail: String, privateKeyID: String, publicKeyPEM: String) {
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.publicKeyPEM = publicKeyPEM
    }
}

/// Simulator settings.
public struct FCMSimulatorConfiguration: Sendable {
    public var host = "127.0.0.1"
    /// 0 picks a free port (returned by ``FCMSimulator/start()``).
    public var port = 0
    public var accounts: [FCMSimulatedAccount]
    /// `expires_in` of minted access tokens; they are refused (401) after it.
    public var accessTokenLifetime: Duration = .seconds(3600)
    /// Sends allowed per project and minute: a token bucket of this capacity
    /// refilled continuously; empty → 429 QUOTA_EXCEEDED with Retry-After.
    public var quotaPerMinute: Int? = nil
    /// Appends every accepted message to this file as one JSON line
    /// `{"service":"fcm","project":…,"token":…,"message":{…}}`, written
    /// before the 200 is answered.
    public var recordTo: String? = nil
    /// Server certificate and key PEM; nil: a self-signed one is generated.
    public var certificatePEM: String? = nil
    public var keyPEM: String? = nil
    /// Advertised SETTINGS_MAX_CONCURRENT_STREAMS (nghttp2 refuses streams beyond it).
    public var maxConcurrentStreams = 100
    /// A connection with nothing received for this long is closed (GOAWAY first).
    public var idleTimeout: Duration = .seconds(120)
    /// A TLS handshake not finished by then closes the connection.
    public var handshakeTimeout: Duration = .seconds(10)
    /// A request not received whole (HEADERS to END_STREAM) by then is reset (CANCEL).
    public var requestTimeout: Duration = .seconds(30)
    /// Connections open at once; more are closed as they are accepted.
    public var maxConnections = 1024
    /// Keep ``FCMSimulator/accepted()`` records (turn off for long runs).
    public var keepAccepted = true
    /// The simulator's idea of now: access-token expiry, JWT `iat`/`exp`
    /// checks and the quota bucket. Inject to expire tokens without sleeping.
    public var now: @Sendable () -> Timestamp = { .now }

    public init(accounts: [FCMSimulatedAccount]) {
        self.accounts = accounts
    }
}

/// What the registry says about a registration token. Well-formed tokens it
/// was told nothing about are valid.
public enum FCMTokenState: Sendable {
    /// Delivered (200).
    case valid
    /// The app was uninstalled: 404 NOT_FOUND / UNREGISTERED.
    case unregistered
    /// Registered to another sender: 403 PERMISSION_DENIED / SENDER_ID_MISMATCH.
    case otherSender
}

/// A fault injected into the next requests (see ``FCMSimulator/inject(_:count:)``).
public enum FCMFault: Sendable, Equatable {
    /// 429 RESOURCE_EXHAUSTED / QUOTA_EXCEEDED; Retry-After as given (nil:
    /// from the quota bucket when one is configured, else none).
    case quotaExceeded(retryAfterSeconds: Int?)
    /// 500 INTERNAL.
    case internalError
    /// 503 UNAVAILABLE, with Retry-After when given.
    case unavailable(retryAfterSeconds: Int?)
    /// 502 with an HTML page (a Google front end's answer, not JSON).
    case badGatewayHTML
    /// 401 UNAUTHENTICATED / THIRD_PARTY_AUTH_ERROR: the project's APNs
    /// certificate or web-push credentials (in Firebase) were refused. Final.
    case thirdPartyAuthError
    /// The request is answered normally, this much later.
    case slow(Duration)
    /// The request is refused unprocessed (RST_STREAM REFUSED_STREAM) and a
    /// GOAWAY(NO_ERROR) naming the streams before it is sent; the connection
    /// closes once those are answered. Safe for the client to retry.
    case goaway
    /// The connection is closed at once, the request unanswered.
    case dropConnection
    /// The token endpoint answers 400 `invalid_grant` (applies to token requests).
    case invalidGrant
}

/// One message the simulator accepted (answered 200).
public struct FCMAcceptedMessage: Sendable {
    public var projectID: String
    /// `message.token`; empty for topic and condition targets.
    public var token: String
    /// The `message` object's bytes exactly as received.
    public var message: [UInt8]
    /// The answered name, `projects/P/messages/ID`.
    public var name: String
    /// `message.topic` or `message.condition` when that was the target.
    public var topic: String?
    public var condition: String?

    public init(projectID: String, token: String, message: [UInt8], name: String, topic: String? = nil, condition: String? = nil) {
        self.projectID = projectID
        self.token = token
        self.message = message
        self.name = name
        self.topic = topic
        self.condition = condition
    }
}
