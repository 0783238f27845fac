public import Logging
import NIOCore
import ProviderSimulation
import NIOPosix
import Synchronization
import TLSTransport

/// A local stand-in for FCM HTTP v1 and Google's OAuth2 token endpoint:
/// HTTP/2 over TLS (ALPN h2) with a self-signed certificate, Google's checks
/// and error shapes, a token registry, fault injection, and a record of what
/// was accepted.
///
/// ```swift
/// let simulator = try FCMSimulator(configuration: configuration, logger: logger)
/// let port = try await simulator.start()
/// // token URL https://127.0.0.1:PORT/token, send to https://127.0.0.1:PORT/v1/projects/P/messages:send,
/// // trusting simulator.certificatePEM
/// await simulator.shutdown()
/// ```
public final class FCMSimulator: Sendable {
    /// The token endpoint's path: the token URL is `https://127.0.0.1:PORT/token`.
    public static let tokenPath = "/token"

    /// PEM of the server certificate (self-signed for 127.0.0.1, ::1 and
    /// localhost: also the CA clients trust, e.g. as their `caFile`).
    public let certificatePEM: String
    let state: FCMSimulatorState
    private let tls: TLSContext
    private let logger: Logger
    private let serverChannel = Mutex<(any Channel)?>(nil)

    public init(configuration: FCMSimulatorConfiguration, logger: Logger) throws {
        let (certificatePEM, keyPEM) = try SimulatorListener.identity(
            certificatePEM: configuration.certificatePEM, keyPEM: configuration.keyPEM)
        self.certificatePEM = certificatePEM
        tls = try TLSContext.server(certificatePEM: certificatePEM, keyPEM: keyPEM)
        let verifiers = try configuration.accounts.map { try AccountVerifier(account: $0) }
        let recordFile = try configuration.recordTo.map { try SimulatorRecordFile(path: $0) }
        state = FCMSimulatorState(configuration: configuration, verifiers: verifiers, recordFile: recordFile)
        self.logger = logger
    }

    /// Binds and starts serving; returns the bound port.
    @discardableResult
    public func start() async throws -> Int {
        let state = self.state
        let tls = self.tls
        let channel = try await SimulatorListener.bind(
            host: state.configuration.host, port: state.configuration.port, group: MultiThreadedEventLoopGroup.singleton,
            tls: tls, handshakeTimeout: state.configuration.handshakeTimeout,
            maxConnections: state.configuration.maxConnections, channels: state.channels
        ) { _, loop in
            SimulatorConnection(adapter: FCMConnectionAdapter(state: state), eventLoop: loop)
        }
        let port = channel.localAddress?.port ?? state.configuration.port
        state.port = port
        serverChannel.withLock { $0 = channel }
        logger.info("FCM simulator listening", metadata: ["host": "\(state.configuration.host)", "port": "\(port)"])
        return port
    }

    /// The bound port (0 before ``start()``).
    public var port: Int { state.port }

    /// `https://127.0.0.1:PORT/token` (or the configured host).
    public var tokenURL: String {
        let host = state.configuration.host.contains(":") ? "[\(state.configuration.host)]" : state.configuration.host
        return "https://\(host):\(port)\(Self.tokenPath)"
    }

    /// Stops listening and closes every connection; waiters return.
    public func shutdown() async {
        let channel = serverChannel.withLock { channel in
            defer { channel = nil }
            return channel
        }
        try? await channel?.close()
        await state.channels.closeAll()
        state.records.close()
        state.recordFile?.closeFile()
    }

    // MARK: Registry and faults

    /// What sends from `project` to `token` get (well-formed tokens never set are valid).
    public func setToken(_ token: String, project: String, state tokenState: FCMTokenState) {
        state.setToken(token, project: project, state: tokenState)
    }

    /// Applies `fault` to the next `count` `messages:send` requests (after
    /// faults injected before it), or — `invalidGrant` — to the next `count`
    /// token requests.
    public func inject(_ fault: FCMFault, count: Int = 1) {
        state.inject(fault, count: count)
    }

    /// Injected faults not yet used.
    public var pendingFaults: Int { state.pendingFaults() }

    /// Forgets every injected fault not yet used.
    public func clearFaults() { state.clearFaults() }

    // MARK: Records

    /// Every accepted message, in acceptance order.
    public func accepted() -> [FCMAcceptedMessage] { state.records.kept }

    /// Messages accepted so far.
    public var acceptedCount: Int { state.records.count }

    /// Messages accepted from now on (also with `keepAccepted` off), e.g. to
    /// log them; the stream ends at ``shutdown()``.
    public func acceptedStream() -> AsyncStream<FCMAcceptedMessage> { state.records.subscribe() }

    /// Returns once at least `count` messages were accepted (or at shutdown).
    public func waitForAccepted(count: Int) async { await state.records.waitFor(count: count) }

    /// Answers by HTTP status (200, 400, 401, 429, …), dropped and refused requests not included.
    public var statusCounts: [Int: Int] { state.records.statusCounts }

    /// Access tokens minted so far.
    public var accessTokensMinted: Int { state.tokensMinted() }

    /// TLS connections accepted so far.
    public var connectionsAccepted: Int { state.channels.accepted }
}
