public import HeraldPrimitives
import TLSTransport

/// One notification the simulator accepted (answered 200).
public struct APNsDelivery: Sendable {
    /// Which TLS connection carried it (1, 2, … in accept order).
    public var connectionID: Int
    /// The HTTP/2 stream it arrived on.
    public var streamID: Int32
    /// The `apns-id` answered (echoed, or generated lowercase UUID).
    public var apnsID: String
    /// The device token from `:path`.
    public var deviceToken: String
    /// Every request header in arrival order (pseudo-headers included, `authorization` too).
    public var headers: [(name: String, value: String)]
    /// The payload bytes.
    public var payload: [UInt8]

    /// The value of the first header named `name`.
    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}

/// Faults the simulator injects, settable at start (flags) or any time (tests).
public struct APNsSimulatorFaults: Sendable {
    /// Tokens answered 410 Unregistered with this `timestamp` (ms since 1970).
    public var unregistered: [String: Int64] = [:]
    /// Tokens answered 400 BadDeviceToken even though well-formed.
    public var badTokens: Set<String> = []
    /// Tokens answered 429 TooManyRequests this many more times (-1: always).
    public var tooManyRequests: [String: Int] = [:]
    /// The next N accepted requests get `serverErrorStatus` instead.
    public var failNext: Int = 0
    /// Fraction (0…1) of requests answered `serverErrorStatus`.
    public var serverErrorRate: Double = 0
    /// 500 (InternalServerError) or 503 (ServiceUnavailable).
    public var serverErrorStatus: Int = 500
    /// Each connection sends GOAWAY after this many streams, refusing the later ones.
    public var goAwayAfterStreams: Int?
    /// Delay before every response.
    public var responseDelay: Duration = .zero
    /// Requests whose device token or `apns-topic` is in this set are never
    /// answered (nor recorded): a hung endpoint. Their streams stay open
    /// until the client resets them or the connection closes.
    public var hang: Set<String> = []

    public init() {}
}

/// Simulator settings.
public struct APNsSimulatorConfiguration: Sendable {
    public var host: String = "127.0.0.1"
    /// 0 picks a free port (see ``APNsSimulator/port``).
    public var port: Int = 0
    /// Server certificate and key PEM; nil: a self-signed CA certificate is generated.
    public var certificatePEM: String?
    public var keyPEM: String?
    /// Expected JWT `kid`; nil accepts any.
    public var keyID: String?
    /// Expected JWT `iss`; nil accepts any.
    public var teamID: String?
    /// The ES256 public key PEM to verify JWT signatures; nil accepts any
    /// signature (the token is still parsed, its claims and age checked).
    public var publicKeyPEM: String?
    /// Allowed `apns-topic` values; nil allows every topic.
    public var allowedTopics: Set<String>?
    /// Accept requests with no `authorization` even without a client certificate.
    public var allowMissingProviderToken = false
    /// Ask clients for a TLS certificate; requests without `authorization` on a
    /// connection that presented one are certificate-authenticated (accepted;
    /// the certificate is not verified).
    public var acceptClientCertificates = true
    /// Advertised SETTINGS_MAX_CONCURRENT_STREAMS.
    public var maxConcurrentStreams: Int = 1000
    /// Provider tokens older than this are ExpiredProviderToken.
    public var providerTokenLifetime: Duration = .seconds(3600)
    /// A connection switching tokens sooner than this after the last switch
    /// (by `iat`) gets 429 TooManyProviderTokenUpdates.
    public var minimumTokenUpdateInterval: Duration = .seconds(20 * 60)
    /// Keep delivery records (turn off for long benchmarks).
    public var recordDeliveries = true
    /// Initial faults.
    public var faults = APNsSimulatorFaults()
    /// The simulator's idea of now (JWT age checks). Inject to test expiry.
    public var now: @Sendable () -> Timestamp = { .now }

    public init() {}
}

/// Connection-level things the simulator saw, for tests that await them.
public enum APNsSimulatorEvent: Sendable {
    /// A TLS + HTTP/2 connection was established.
    case connectionOpened(connectionID: Int)
    /// A PING (not an ACK) arrived on a connection.
    case ping(connectionID: Int)
    /// A GOAWAY arrived from the client.
    case goAwayReceived(connectionID: Int)
    /// A connection closed.
    case connectionClosed(connectionID: Int)
    /// A complete request matched the `hang` fault and will never be answered.
    case requestHeld(connectionID: Int, deviceToken: String, topic: String?)
}
