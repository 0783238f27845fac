import HeraldPrimitives
public import NIOCore
public import ProviderHTTP2

/// Where the client connects.
public struct APNsEndpoint: Hashable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }
    /// `api.push.apple.com:443`.
    public static let production = APNsEndpoint(host: "api.push.apple.com", port: 443)
    /// `api.sandbox.push.apple.com:443`.
    public static let sandbox = APNsEndpoint(host: "api.sandbox.push.apple.com", port: 443)
    public var description: String { "\(host):\(port)" }
}

/// How the client authenticates to APNs.
public enum APNsCredentials: Sendable {
    /// Token auth: an ES256 JWT signed with the team's .p8 key (PKCS#8 PEM, EC P-256).
    case token(keyID: String, teamID: String, privateKeyPEM: String)
    /// Certificate auth: a client certificate (PEM, leaf first) and its private key (PEM).
    case certificate(certificatePEM: String, privateKeyPEM: String)
    /// Certificate auth from a PKCS#12 (.p12) export.
    case pkcs12(der: [UInt8], password: String)
}

/// Exponential backoff: `initial`, doubling, capped at `maximum` (``ProviderBackoff``).
public typealias APNsBackoff = ProviderBackoff

/// Everything an ``APNsClient`` needs. One client (pool) per credentials and endpoint.
public struct APNsClientConfiguration: Sendable {
    public var endpoint: APNsEndpoint
    public var credentials: APNsCredentials
    /// Trust this CA file instead of the system store (the simulator's `--ca-out`).
    public var trustedCAFile: String?
    /// Trust this CA PEM instead of the system store.
    public var trustedCAPEM: String?
    /// Connections in the pool (opened lazily, least-loaded first).
    public var maxConnections: Int = 2
    /// Local cap on streams per connection (the peer's SETTINGS_MAX_CONCURRENT_STREAMS also applies).
    public var maxConcurrentStreamsPerConnection: Int = 1000
    /// Send a PING when a connection has been quiet this long; close it if unanswered by the next tick.
    public var pingInterval: Duration = .seconds(60)
    /// Close a connection with no streams for this long (nil: keep it, PINGing).
    public var idleTimeout: Duration? = .seconds(600)
    /// TCP + TLS connect timeout.
    public var connectTimeout: Duration = .seconds(10)
    /// Reconnect pacing after failed connects: about 1 s doubling to 60 s.
    public var reconnectBackoff = APNsBackoff(initial: .seconds(1), maximum: .seconds(60))
    /// Retry pacing for 5xx, Shutdown, timeouts and dropped streams: 1 s
    /// doubling to 60 s, full jitter (each pause uniform in 0...that), so
    /// many requests failed by one outage do not come back in lockstep.
    public var retryBackoff = APNsBackoff(initial: .seconds(1), maximum: .seconds(60), jitter: 0)
    /// Attempts for a request without a deadline. A request with a deadline
    /// is retried until the deadline (its TTL or window) runs out, however
    /// many attempts that takes.
    public var maxAttempts: Int = 6
    /// A stream with no response this long is reset and retried. APNs answers
    /// in well under a second when healthy; 30 s leaves room for a congested
    /// path, and bounds how long one hung endpoint holds a request (and its
    /// route's in-flight slot) before the retry.
    public var responseTimeout: Duration = .seconds(30)
    /// Per device token after 429 TooManyRequests.
    public var tooManyRequestsBackoff = APNsBackoff(initial: .seconds(1), maximum: .seconds(300))
    /// Mint a new provider token when the current one is this old (APNs rejects after 60 min).
    public var tokenRefreshAge: Duration = .seconds(50 * 60)
    /// Never mint provider tokens more often than this (APNs: TooManyProviderTokenUpdates).
    public var tokenMinimumRefreshInterval: Duration = .seconds(20 * 60)
    /// Time source (inject a manual clock in tests).
    public var clock: any APNsClock = SystemAPNsClock()
    /// Event loops for the connections (default: NIO's shared singleton group).
    public var eventLoopGroup: (any EventLoopGroup)?

    public init(endpoint: APNsEndpoint, credentials: APNsCredentials) {
        self.endpoint = endpoint
        self.credentials = credentials
    }
}
