public import HeraldPrimitives
public import Logging
import NIOCore
import ProviderHTTP2
import Synchronization
import TLSTransport

/// What operators see of a pool.
public struct APNsPoolStatus: Sendable, Equatable {
    public var endpoint: APNsEndpoint
    /// Connections established (ready or draining).
    public var connectionsOpen: Int
    /// Streams waiting for a response.
    public var streamsInFlight: Int
    /// Requests queued locally beyond the streams allowed.
    public var queued: Int
    /// The last connection-level error, if any.
    public var lastError: String?
    /// Provider tokens minted so far (token auth).
    public var providerTokensMinted: Int
    /// Reconnect delays waited so far, every slot.
    public var reconnectDelays: [Duration]
}

/// An APNs HTTP/2 client: a pool of TLS connections for one set of
/// credentials and one endpoint. Send from any task; thread-safe.
///
/// Keys of several teams never share a connection: make one client per
/// credentials and environment.
public final class APNsClient: Sendable {
    public let configuration: APNsClientConfiguration
    private let tokens: ProviderTokenCache?
    private let pool: HTTP2ClientPool<APNsHTTP2Adapter>
    private let deviceBackoff = Mutex<[String: (until: Timestamp, failures: Int)]>([:])
    private let logger: Logger

    public init(configuration: APNsClientConfiguration, logger: Logger = Logger(label: "herald.apns")) throws {
        self.configuration = configuration
        self.logger = logger
        let tls: TLSContext
        var tokens: ProviderTokenCache?
        do {
            switch configuration.credentials {
            case .token(let keyID, let teamID, let privateKeyPEM):
                tls = try TLSContext.client(trustedCAFile: configuration.trustedCAFile, trustedCAPEM: configuration.trustedCAPEM)
                let signer = try APNsTokenSigner(keyID: keyID, teamID: teamID, privateKeyPEM: privateKeyPEM)
                tokens = ProviderTokenCache(
                    signer: signer, refreshAge: configuration.tokenRefreshAge,
                    minimumInterval: configuration.tokenMinimumRefreshInterval)
            case .certificate(let certificatePEM, let privateKeyPEM):
                tls = try TLSContext.client(
                    trustedCAFile: configuration.trustedCAFile, trustedCAPEM: configuration.trustedCAPEM,
                    clientCertificatePEM: certificatePEM, clientKeyPEM: privateKeyPEM)
            case .pkcs12(let der, let password):
                let identity = try PKCS12Bundle.pem(fromDER: der, password: password)
                tls = try TLSContext.client(
                    trustedCAFile: configuration.trustedCAFile, trustedCAPEM: configuration.trustedCAPEM,
                    clientCertificatePEM: identity.certificatePEM, clientKeyPEM: identity.keyPEM)
            }
        } catch let error as APNsError {
            throw error
        } catch {
            throw APNsError.configuration("\(error)")
        }
        self.tokens = tokens
        let settings = HTTP2PoolSettings(
            label: "APNs", host: configuration.endpoint.host, port: configuration.endpoint.port, clock: configuration.clock,
            maxConnections: configuration.maxConnections,
            maxConcurrentStreamsPerConnection: configuration.maxConcurrentStreamsPerConnection,
            responseTimeout: configuration.responseTimeout, pingInterval: configuration.pingInterval,
            idleTimeout: configuration.idleTimeout, connectTimeout: configuration.connectTimeout,
            reconnectBackoff: configuration.reconnectBackoff)
        pool = HTTP2ClientPool(
            settings: settings, adapter: APNsHTTP2Adapter(tokens: tokens), tls: tls,
            group: configuration.eventLoopGroup, logger: logger)
    }

    /// Sends one notification and returns APNs' answer.
    ///
    /// Retries until the request's deadline (its TTL or delivery window) runs
    /// out, not a fixed count (without a deadline: `maxAttempts`; with
    /// `singleAttempt`: none): 5xx, Shutdown, response timeouts, resets and
    /// dropped connections after a pause of exponential backoff with full
    /// jitter (`retryBackoff`, on the injected clock); refused streams
    /// (GOAWAY) at once; ExpiredProviderToken on a fresh connection with a
    /// fresh token; 429 TooManyRequests after the device token's backoff.
    /// Other statuses (200, 400, 403, 410, 413…) are returned.
    ///
    /// Cancelling the calling task withdraws the request (``APNsError/cancelled``).
    public func send(_ request: APNsRequest) async throws -> APNsResponse {
        do {
            return try await sendWithRetries(request)
        } catch is CancellationError {
            throw APNsError.cancelled
        }
    }

    /// Whether a request that failed `attempts` times may go again (the
    /// deadline itself is checked before each attempt and each pause).
    private func mayRetry(_ request: APNsRequest, attempts: Int) -> Bool {
        if request.singleAttempt { return false }
        return request.deadline != nil || attempts < configuration.maxAttempts
    }

    private func sendWithRetries(_ request: APNsRequest) async throws -> APNsResponse {
        let clock = configuration.clock
        let http = HTTP2ClientRequest(
            path: "/3/device/" + request.deviceToken, headers: request.headers, body: request.payload,
            deadline: request.deadline, willHandOver: request.willHandOver)
        var attempts = 0
        var refusals = 0
        var lastProblem = ""
        while true {
            if let deadline = request.deadline, clock.now() >= deadline { throw APNsError.deadlineExceeded }
            try await waitForDeviceBackoff(request)
            attempts += 1
            let outcome: Result<APNsResponse, APNsError>
            do {
                outcome = .success(try await pool.send(http))
            } catch {
                outcome = .failure(APNsError(error))
            }
            switch outcome {
            case .success(var response):
                response.attempts = attempts
                let status = response.status
                if status == 200 {
                    clearDeviceBackoff(request.deviceToken)
                    return response
                }
                // A fresh token on a fresh connection fixes this at once; the
                // count bounds a loop if APNs keeps refusing fresh tokens.
                if response.reason == .expiredProviderToken, attempts < configuration.maxAttempts, mayRetry(request, attempts: attempts) {
                    logger.info("APNs provider token expired; reconnecting with a fresh token")
                    lastProblem = "ExpiredProviderToken"
                    continue
                }
                if status == 429 && response.reason != .tooManyProviderTokenUpdates {
                    let until = recordDeviceBackoff(request.deviceToken)
                    if mayRetry(request, attempts: attempts), request.deadline.map({ until < $0 }) ?? true { continue }
                    return response
                }
                if status >= 500 || response.reason == .shutdown {
                    lastProblem = "\(status) \(response.reason?.rawValue ?? "")"
                    if mayRetry(request, attempts: attempts) {
                        try await retryPause(attempts, request)
                        continue
                    }
                }
                return response
            case .failure(let error):
                lastProblem = error.description
                switch error {
                case .streamRefused:
                    // Never processed (above GOAWAY's last-stream-id): resend, it is not a duplicate.
                    attempts -= 1
                    refusals += 1
                    if refusals > 100 { throw APNsError.retriesExhausted(lastProblem) }
                    continue
                case .connectionClosed, .streamReset, .responseTimeout:
                    if mayRetry(request, attempts: attempts) {
                        try await retryPause(attempts, request)
                        continue
                    }
                    throw error == .responseTimeout ? error : APNsError.retriesExhausted(lastProblem)
                case .connectFailed(_, let retryable):
                    // The slot paces reconnects (1 s doubling to 60 s); just requeue.
                    if retryable && mayRetry(request, attempts: attempts) { continue }
                    throw error
                default:
                    throw error
                }
            }
        }
    }

    private func retryPause(_ attempts: Int, _ request: APNsRequest) async throws {
        let delay = configuration.retryBackoff.delay(afterFailures: attempts)
        if let deadline = request.deadline,
           configuration.clock.now().addingTimeInterval(delay.timeInterval) >= deadline {
            throw APNsError.deadlineExceeded
        }
        try await configuration.clock.sleep(for: delay)
    }

    // MARK: 429 per device token

    private func recordDeviceBackoff(_ token: String) -> Timestamp {
        let now = configuration.clock.now()
        return deviceBackoff.withLock { table in
            let failures = (table[token]?.failures ?? 0) + 1
            let until = now.addingTimeInterval(configuration.tooManyRequestsBackoff.delay(afterFailures: failures).timeInterval)
            table[token] = (until, failures)
            if table.count > 100_000 { table = table.filter { $0.value.until > now } }
            return until
        }
    }

    private func clearDeviceBackoff(_ token: String) {
        deviceBackoff.withLock { table in
            if !table.isEmpty { table.removeValue(forKey: token) }
        }
    }

    /// Waits out a device token's 429 backoff, or throws if it outlasts the deadline.
    private func waitForDeviceBackoff(_ request: APNsRequest) async throws {
        let entry = deviceBackoff.withLock { $0.isEmpty ? nil : $0[request.deviceToken] }
        guard let until = entry?.until else { return }
        let now = configuration.clock.now()
        guard until > now else { return }
        if let deadline = request.deadline, until >= deadline {
            throw APNsError.deviceBackingOff(untilEpochSeconds: until.timeIntervalSince1970)
        }
        try await configuration.clock.sleep(for: .nanoseconds(Int64(until.timeIntervalSince(now) * 1e9)))
    }

    /// When a device token may be sent to again after 429, if it is backing off.
    public func backoff(forDeviceToken token: String) -> Timestamp? {
        deviceBackoff.withLock { $0[token]?.until }
    }

    // MARK: Operators

    /// Endpoint, connections open, streams in flight, last error.
    public func status() async -> APNsPoolStatus {
        let pool = await pool.status()
        return APNsPoolStatus(
            endpoint: configuration.endpoint, connectionsOpen: pool.open, streamsInFlight: pool.inFlight,
            queued: pool.queued, lastError: pool.lastError, providerTokensMinted: tokens?.minted ?? 0,
            reconnectDelays: pool.reconnectDelays)
    }

    /// Closes every connection and fails queued requests with ``APNsError/shutdown``.
    public func shutdown() async {
        await pool.shutdown()
    }
}

extension APNsClient: RegisteredProviderClient {}
