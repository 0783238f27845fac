public import NIOCore
import HeraldPrimitives
public import ProviderHTTP2

/// Exponential backoff: `initial`, doubling, capped at `maximum`, with jitter (``ProviderBackoff``).
public typealias FCMBackoff = ProviderBackoff

extension Duration {
    static func seconds(interval: Double) -> Duration { .nanoseconds(Int64(max(interval, 0) * 1e9)) }
}

/// Everything an ``FCMClient`` needs: one client per service account (project) and endpoint.
public struct FCMClientConfiguration: Sendable {
    public var serviceAccount: FCMServiceAccount
    public var endpoint: FCMEndpoint
    /// Overrides ``FCMServiceAccount/tokenURI`` (`https://host[:port]/path`).
    public var tokenURL: String?
    /// A PEM CA file to trust instead of the system store (the simulator's certificate).
    public var caFile: String?
    /// A PEM CA to trust instead of the system store (tests).
    public var caPEM: String?
    /// Connections to the FCM endpoint (opened lazily, least-loaded first).
    public var maxConnections: Int
    /// Per-project token bucket: messages per minute (bursts of one second's worth).
    public var ratePerMinute: Int
    /// Per attempt: a stream with no answer this long is reset and retried.
    public var requestTimeout: Duration
    /// Time source (inject a manual clock in tests).
    public var clock: any FCMClock
    /// Local cap on streams per connection (the peer's SETTINGS_MAX_CONCURRENT_STREAMS also applies).
    public var maxConcurrentStreamsPerConnection = 1000
    /// PING a connection quiet this long; close it if unanswered by the next tick.
    public var pingInterval: Duration = .seconds(60)
    /// Close a connection with no streams for this long.
    public var idleTimeout: Duration? = .seconds(600)
    /// TCP + TLS connect timeout.
    public var connectTimeout: Duration = .seconds(10)
    /// Reconnect pacing after failed connects: 1 s doubling to 60 s.
    public var reconnectBackoff = FCMBackoff(initial: .seconds(1), maximum: .seconds(60))
    /// 500/502/503/504 and dropped streams without Retry-After: 1 s doubling to 60 s, full jitter.
    public var retryBackoff = FCMBackoff(initial: .seconds(1), maximum: .seconds(60), jitter: 0)
    /// 429 without Retry-After: 60 s doubling to 10 min (FCM's project quota refills per minute).
    public var quotaBackoff = FCMBackoff(initial: .seconds(60), maximum: .seconds(600), jitter: 1)
    /// Attempts for a request without a deadline (with one: until the deadline).
    public var maxAttempts = 6
    /// Refresh the access token this long before it expires (half its lifetime when that is shorter).
    public var tokenRefreshMargin: Duration = .seconds(300)
    /// Event loops for the connections (default: NIO's shared singleton group).
    public var eventLoopGroup: (any EventLoopGroup)?

    public init(
        serviceAccount: FCMServiceAccount, endpoint: FCMEndpoint = .production, tokenURL: String? = nil,
        caFile: String? = nil, maxConnections: Int = 2, ratePerMinute: Int = 600_000,
        requestTimeout: Duration = .seconds(30), clock: any FCMClock = SystemFCMClock()
    ) {
        self.serviceAccount = serviceAccount
        self.endpoint = endpoint
        self.tokenURL = tokenURL
        self.caFile = caFile
        self.maxConnections = maxConnections
        self.ratePerMinute = ratePerMinute
        self.requestTimeout = requestTimeout
        self.clock = clock
    }
}
