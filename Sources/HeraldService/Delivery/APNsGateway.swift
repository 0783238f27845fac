public import APNs
public import APNsSimulation
public import HeraldCore
public import Logging
import TLSTransport

/// Where pushes go: an APNs client per (credentials, environment), chosen by
/// bundle id and the device's environment.
///
/// With no APNs configuration, Herald starts the bundled APNs simulator
/// in-process on loopback and delivers to it over real TLS with a real ES256
/// provider token, so the whole pipeline runs on one machine.
public final class APNsGateway: Sendable {
    /// One configured APNs client and what it serves.
    public struct Route: Sendable {
        /// Bundle ids (APNs topics) this route serves; `*` serves every bundle.
        public var bundleIDs: Set<String>
        /// The device environment it serves; nil serves both.
        public var environment: APNsEnvironment?
        public var client: APNsClient

        public init(bundleIDs: Set<String>, environment: APNsEnvironment?, client: APNsClient) {
            self.bundleIDs = bundleIDs
            self.environment = environment
            self.client = client
        }

        func serves(bundleID: String, environment: APNsEnvironment) -> Bool {
            (self.environment == nil || self.environment == environment)
                && (bundleIDs.contains("*") || bundleIDs.contains(bundleID))
        }
    }

    public let routes: [Route]
    /// The in-process simulator, when Herald runs on its embedded defaults.
    public let simulator: APNsSimulator?

    public init(routes: [Route], simulator: APNsSimulator? = nil) {
        self.routes = routes
        self.simulator = simulator
    }

    /// The client for a bundle and environment; nil when none is configured.
    /// Specific bundle routes win over `*`. A device registered without an
    /// environment counts as production.
    public func client(bundleID: String, environment: APNsEnvironment?) -> APNsClient? {
        let environment = environment ?? .production
        let matching = routes.filter { $0.serves(bundleID: bundleID, environment: environment) }
        return (matching.first { $0.bundleIDs.contains(bundleID) } ?? matching.first)?.client
    }

    /// Each client once: routes of one team and endpoint share a pool.
    private var clients: [APNsClient] {
        var seen: Set<ObjectIdentifier> = []
        return routes.map(\.client).filter { seen.insert(ObjectIdentifier($0)).inserted }
    }

    public func poolStatuses() async -> [APNsPoolStatus] {
        var statuses: [APNsPoolStatus] = []
        for client in clients { statuses.append(await client.status()) }
        return statuses
    }

    public func shutdown() async {
        for client in clients { await client.shutdown() }
        try? await simulator?.stop()
    }

    /// Starts the bundled simulator on 127.0.0.1 (a free port, a fresh
    /// self-signed certificate, a fresh ES256 key whose public half it
    /// verifies) and one client for every bundle and environment.
    public static func embedded(
        faults: APNsSimulatorFaults = APNsSimulatorFaults(), responseTimeout: Duration = .seconds(30), logger: Logger
    ) async throws -> APNsGateway {
        let key = try PrivateKey.generateP256()
        var simulatorConfiguration = APNsSimulatorConfiguration()
        simulatorConfiguration.keyID = "HERALDSIM1"
        simulatorConfiguration.teamID = "HERALDTEAM"
        simulatorConfiguration.publicKeyPEM = try key.publicKeyPEM()
        // Deliveries reach `--sim-record` through the delivery stream; an
        // in-memory record of every one would grow without bound.
        simulatorConfiguration.recordDeliveries = false
        let simulator = try await APNsSimulator.start(simulatorConfiguration)
        simulator.updateFaults { $0 = faults }
        var clientConfiguration = APNsClientConfiguration(
            endpoint: APNsEndpoint(host: simulator.host, port: simulator.port),
            credentials: .token(keyID: "HERALDSIM1", teamID: "HERALDTEAM", privateKeyPEM: try key.privateKeyPEM()))
        clientConfiguration.trustedCAPEM = simulator.caCertificatePEM
        clientConfiguration.responseTimeout = responseTimeout
        let client = try APNsClient(configuration: clientConfiguration, logger: logger)
        logger.info("no APNs credentials configured: delivering to the bundled APNs simulator",
                    metadata: ["endpoint": "\(simulator.host):\(simulator.port)"])
        return APNsGateway(routes: [Route(bundleIDs: ["*"], environment: nil, client: client)], simulator: simulator)
    }
}
