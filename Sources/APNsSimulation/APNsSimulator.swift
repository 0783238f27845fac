public import NIOCore
import NIOPosix
import ProviderSimulation
import TLSTransport

/// A local stand-in for APNs: HTTP/2 over TLS (ALPN h2), Apple's validation
/// rules and reasons, fault injection, and a record of what was accepted.
///
/// ```swift
/// let simulator = try await APNsSimulator.start(configuration)
/// // trust simulator.caCertificatePEM, connect to 127.0.0.1:simulator.port
/// await simulator.waitForDeliveries(count: 10)
/// try await simulator.stop()
/// ```
public final class APNsSimulator: Sendable {
    /// The bound port.
    public let port: Int
    /// The host it listens on.
    public let host: String
    /// PEM of the server certificate (self-signed: also the CA to trust).
    public let caCertificatePEM: String
    let state: SimulatorState
    private let serverChannel: any Channel
    let tls: TLSContext

    private init(port: Int, host: String, caCertificatePEM: String, state: SimulatorState, serverChannel: any Channel, tls: TLSContext) {
        self.port = port
        self.host = host
        self.caCertificatePEM = caCertificatePEM
        self.state = state
        self.serverChannel = serverChannel
        self.tls = tls
    }

    /// Binds and starts serving.
    public static func start(
        _ configuration: APNsSimulatorConfiguration = APNsSimulatorConfiguration(),
        group: (any EventLoopGroup)? = nil
    ) async throws -> APNsSimulator {
        let (certificatePEM, keyPEM) = try SimulatorListener.identity(
            certificatePEM: configuration.certificatePEM, keyPEM: configuration.keyPEM)
        let tls = try TLSContext.server(
            certificatePEM: certificatePEM, keyPEM: keyPEM,
            requestClientCertificate: configuration.acceptClientCertificates)
        let verifier = try configuration.publicKeyPEM.map { try PrivateKey.publicKey(pem: $0) }
        let state = SimulatorState(configuration: configuration, verifier: verifier)
        let channel = try await SimulatorListener.bind(
            host: configuration.host, port: configuration.port, group: group ?? MultiThreadedEventLoopGroup.singleton,
            tls: tls, channels: state.channels
        ) { id, loop in
            SimulatorConnection(adapter: APNsConnectionAdapter(id: id, state: state), eventLoop: loop)
        }
        let port = channel.localAddress?.port ?? configuration.port
        return APNsSimulator(
            port: port, host: configuration.host, caCertificatePEM: certificatePEM, state: state,
            serverChannel: channel, tls: tls)
    }

    /// Stops listening and closes every connection; delivery streams end
    /// (their consumers see every delivery accepted before, then the end).
    public func stop() async throws {
        try? await serverChannel.close()
        await state.channels.closeAll()
        state.records.finishStreams()
    }

    // MARK: Faults

    /// Replaces or edits the faults.
    public func updateFaults(_ body: (inout APNsSimulatorFaults) -> Void) {
        state.updateFaults(body)
    }

    /// The current faults.
    public var faults: APNsSimulatorFaults { state.currentFaults() }

    // MARK: Records

    /// Every accepted notification, in acceptance order.
    public var delivered: [APNsDelivery] { state.records.kept }

    /// Accepted notifications so far.
    public var deliveredCount: Int { state.records.count }

    /// How many times `apnsID` was accepted (1 unless something was sent twice).
    public func deliveries(apnsID: String) -> Int { state.count(apnsID: apnsID) }

    /// Requests answered with each status (200, 400, 410, …), refused streams not included.
    public var statusCounts: [Int: Int] { state.records.statusCounts }

    /// The most streams open at once on any one connection.
    public var maxConcurrentStreamsSeen: Int { state.maxConcurrentStreamsSeen() }

    /// TLS connections accepted so far.
    public var connectionsAccepted: Int { state.channels.accepted }

    /// Provider-token switches seen across connections.
    public var providerTokenUpdates: Int { state.tokenUpdates() }

    /// A stream of deliveries from now on.
    public func deliveryStream() -> AsyncStream<APNsDelivery> { state.records.subscribe() }

    /// A stream of connection events (opened, PING, GOAWAY, closed) from now on.
    public func events() -> AsyncStream<APNsSimulatorEvent> { state.subscribeEvents() }

    /// Returns once at least `count` notifications were accepted.
    public func waitForDeliveries(count: Int) async {
        await state.records.waitFor(count: count)
    }

    /// Forgets recorded deliveries and counts.
    public func resetRecords() { state.resetRecords() }
}
