public import Logging
import HeraldPrimitives
import NIOCore
import NIOPosix
import ProviderHTTP2
import Synchronization
import TLSTransport

/// An FCM HTTP v1 client for one service account: OAuth access tokens, a
/// pool of HTTP/2 + TLS connections, error mapping, retries and a
/// per-project rate bucket. Send from any task; thread-safe.
public final class FCMClient: Sendable {
    public let configuration: FCMClientConfiguration
    let logger: Logger
    let pool: FCMHTTP2Pool
    let tokens: FCMAccessTokens
    let limiter: FCMRateLimiter
    let policy: FCMRetryPolicy
    let isShutdown = Atomic<Bool>(false)
    private let tokenPool: FCMHTTP2Pool

    public init(configuration: FCMClientConfiguration, logger: Logger) throws {
        let account = configuration.serviceAccount
        try account.validate()
        let tokenURLText = configuration.tokenURL ?? account.tokenURI
        let tokenURL: FCMTokenURL
        do {
            tokenURL = try FCMTokenURL(tokenURLText)
        } catch {
            throw FCMError.tokenEndpoint("token URL \(tokenURLText): \(error)")
        }
        let signer = try FCMAssertionSigner(account: account, audience: tokenURLText)
        let tls: TLSContext
        do {
            tls = try TLSContext.client(trustedCAFile: configuration.caFile, trustedCAPEM: configuration.caPEM)
        } catch {
            throw FCMError.connectionFailed("TLS set-up: \(error)")
        }
        self.configuration = configuration
        self.logger = logger
        let group = configuration.eventLoopGroup ?? MultiThreadedEventLoopGroup.singleton
        var settings = HTTP2PoolSettings(
            label: "FCM", host: configuration.endpoint.host, port: configuration.endpoint.port, clock: configuration.clock,
            maxConnections: configuration.maxConnections,
            maxConcurrentStreamsPerConnection: configuration.maxConcurrentStreamsPerConnection,
            responseTimeout: configuration.requestTimeout, pingInterval: configuration.pingInterval,
            idleTimeout: configuration.idleTimeout, connectTimeout: configuration.connectTimeout,
            reconnectBackoff: configuration.reconnectBackoff)
        pool = FCMHTTP2Pool(settings: settings, adapter: FCMHTTP2Adapter(), tls: tls, group: group, logger: logger)
        settings.label = "OAuth token endpoint"
        settings.host = tokenURL.host
        settings.port = tokenURL.port
        settings.maxConnections = 1
        settings.idleTimeout = .seconds(120)
        let tokenPool = FCMHTTP2Pool(settings: settings, adapter: FCMHTTP2Adapter(), tls: tls, group: group, logger: logger)
        self.tokenPool = tokenPool
        let clock = configuration.clock
        let timeout = configuration.requestTimeout
        tokens = FCMAccessTokens(clock: clock, refreshMargin: configuration.tokenRefreshMargin, timerLoop: group.next()) {
            await Self.fetchToken(pool: tokenPool, url: tokenURL, signer: signer, clock: clock, timeout: timeout, logger: logger)
        }
        limiter = FCMRateLimiter(ratePerMinute: configuration.ratePerMinute)
        policy = FCMRetryPolicy(retryBackoff: configuration.retryBackoff, quotaBackoff: configuration.quotaBackoff)
    }

    /// Sends one message and returns FCM's answer (the final attempt's).
    ///
    /// Waits for the project's rate bucket, then sends; 429 waits for
    /// `Retry-After` (else 60 s doubling), 500/502/503/504 and dropped
    /// streams back off with jitter (honouring `Retry-After`), a 401 without
    /// an FCM error detail refreshes the access token once. Without a
    /// deadline at most `maxAttempts`; with one, until a wait would pass it:
    /// then the last answer is returned (or ``FCMError/deadlineExceeded``
    /// when there is none). `singleAttempt`: no retries.
    public func send(_ request: FCMRequest) async throws -> FCMResponse {
        guard !request.projectID.isEmpty, request.projectID.utf8.count <= 128,
              request.projectID.utf8.allSatisfy(FCMServiceAccount.isProjectIDByte) else {
            throw FCMError.invalidServiceAccount("project ID \(request.projectID.prefix(64)) is not a Firebase project ID")
        }
        return try await sendWithRetries(request)
    }

    /// Endpoint, connections, streams in flight, last error, tokens minted.
    public func status() async -> FCMPoolStatus {
        let pool = await pool.status()
        return FCMPoolStatus(
            endpoint: configuration.endpoint, connectionsOpen: pool.open, streamsInFlight: pool.inFlight,
            lastError: pool.lastError ?? tokens.lastError.withLock { $0 },
            accessTokensMinted: tokens.minted.load(ordering: .relaxed))
    }

    /// Returns once an access-token fetch in flight (a background refresh
    /// included) has finished; at once when none is. For tests that move a
    /// manual clock only after the refresh it started has landed.
    package func accessTokenFetchSettled() async {
        await tokens.settled()
    }

    /// Closes every connection; queued and later sends fail with ``FCMError/shutdown``.
    public func shutdown() async {
        isShutdown.store(true, ordering: .relaxed)
        await tokens.shutdown()
        await pool.shutdown()
        await tokenPool.shutdown()
    }

    /// One POST to the token endpoint.
    private static func fetchToken(
        pool: FCMHTTP2Pool, url: FCMTokenURL, signer: FCMAssertionSigner, clock: any FCMClock, timeout: Duration, logger: Logger
    ) async -> Result<(token: String, expiresIn: Int64), FCMTokenFailure> {
        let now = clock.now()
        let body: [UInt8]
        do {
            body = try signer.tokenRequestBody(issuedAt: now)
        } catch {
            return .failure(FCMTokenFailure(description: "\(error)", retryable: false))
        }
        let request = FCMHTTPRequest(
            path: url.path,
            headers: [("content-type", "application/x-www-form-urlencoded"), ("accept", "application/json")],
            body: body, deadline: now.addingTimeInterval(timeout.timeInterval))
        let result: Result<(token: String, expiresIn: Int64), FCMTokenFailure>
        do {
            let answer = try await pool.send(request)
            result = FCMTokenResponse.parse(status: answer.status, body: answer.body, truncated: answer.bodyTruncated)
        } catch {
            var retryable = true
            if case .credentials = error { retryable = false }
            if case .connectFailed(_, let canRetry) = error { retryable = canRetry }
            if error == .shutdown { retryable = false }
            result = .failure(FCMTokenFailure(description: "\(url) unreachable: \(error)", retryable: retryable))
        }
        if case .failure(let failure) = result {
            logger.warning("FCM access token not obtained", metadata: [
                "client_email": "\(signer.account.clientEmail)", "token_url": "\(url)", "error": "\(failure)",
            ])
        }
        return result
    }
}

extension FCMClient: RegisteredProviderClient {}
