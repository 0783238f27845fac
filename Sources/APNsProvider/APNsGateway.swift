public import APNs
public import APNsSimulation
public import HeraldCore
public import Logging
public import PushProviders
import Synchronization
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
        /// How logs and Status name it (its pool and bundles).
        public var name: String

        public init(bundleIDs: Set<String>, environment: APNsEnvironment?, client: APNsClient, name: String = "") {
            self.bundleIDs = bundleIDs
            self.environment = environment
            self.client = client
            self.name = name.isEmpty ? "\(client.configuration.endpoint) bundles=\(bundleIDs.sorted().joined(separator: ","))" : name
        }

        /// What makes two routes' clients interchangeable (pool key,
        /// credentials, CA, timeout): a reload keeps the client of a route
        /// whose identity is unchanged. In memory only, never logged.
        package var identity = ""

        func serves(bundleID: String, environment: APNsEnvironment) -> Bool {
            (self.environment == nil || self.environment == environment)
                && (bundleIDs.contains("*") || bundleIDs.contains(bundleID))
        }
    }

    /// The routes in force now; a reload (SIGHUP) swaps them at once.
    public var routes: [Route] { current.withLock { $0 } }
    let current: Mutex<[Route]>
    /// Sends in flight per client, and clients a reload retired.
    package let retirement = ClientRetirement<APNsClient>()
    /// The in-process simulator, when Herald runs on its embedded defaults.
    public let simulator: APNsSimulator?
    /// Errors and auth refusals per pool (Status), delivery metrics.
    let errors = ProviderErrorBook()
    private let observation = Mutex<(metrics: any DeliveryMetrics, logger: Logger)?>(nil)

    public init(routes: [Route], simulator: APNsSimulator? = nil) {
        current = Mutex(routes)
        self.simulator = simulator
    }

    /// The client for a bundle and environment; nil when none is configured.
    /// Specific bundle routes win over `*`. A device registered without an
    /// environment counts as production.
    public func client(bundleID: String, environment: APNsEnvironment?) -> APNsClient? {
        let environment = environment ?? .production
        let matching = current.withLock { $0 }.filter { $0.serves(bundleID: bundleID, environment: environment) }
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

    /// Each pool's status with its route's name and error book entry.
    public func poolReports() async -> [ProviderPoolReport] {
        var reports: [ProviderPoolReport] = []
        let routes = routes
        for client in clients {
            let bundles = routes.filter { $0.client === client }.reduce(into: Set<String>()) { $0.formUnion($1.bundleIDs) }
            let status = await client.status()
            let errors = errors.entry(ObjectIdentifier(client))
            reports.append(ProviderPoolReport(
                platform: .ios, service: "apns", route: routeName(client), endpoint: status.endpoint.description,
                connectionsOpen: status.connectionsOpen, streamsInFlight: status.streamsInFlight,
                lastError: errors.lastError ?? status.lastError, lastErrorAt: errors.lastErrorAt, authFailures: errors.authFailures,
                credentialsMinted: status.providerTokensMinted, bundleIDs: bundles))
        }
        return reports
    }

    private func routeName(_ client: APNsClient) -> String {
        routes.first { $0.client === client }?.name ?? "\(client.configuration.endpoint)"
    }

    /// Records delivery metrics in `metrics` and logs auth refusals through `logger`.
    package func observe(metrics: any DeliveryMetrics, logger: Logger) {
        observation.withLock { $0 = (metrics, logger) }
    }

    /// Sends through `client`, timing the request and keeping its pool's
    /// error book and the delivery counters.
    public func send(_ request: APNsRequest, with client: APNsClient) async throws -> APNsResponse {
        try await errors.observedSend(
            through: client, retirement: retirement, route: { routeName(client) }, service: ("apns", "APNs"),
            observation: observation.withLock { $0 }, { try await client.send(request) },
            answered: { response in
                let reason = response.reason.map { Self.isPoolError($0) ? $0 : nil } ?? nil
                return ProviderSendVerdict(
                    outcome: response.isSuccess ? "accepted" : DeviceOutcomeKind(refusal: response).rawValue,
                    booked: response.isSuccess || reason != nil || response.status >= 500,
                    error: response.isSuccess ? nil : "HTTP \(response.status) \(response.reason?.rawValue ?? "")",
                    authReason: reason.flatMap { ProviderErrorBook.apnsAuthReasons.contains($0) ? $0.rawValue : nil })
            },
            failed: { error in
                let outcome = switch error {
                case APNsError.deadlineExceeded: "expired"
                case APNsError.shutdown: "interrupted"
                default: "error"
                }
                return ProviderSendVerdict(outcome: outcome, booked: true, error: "\(error)")
            })
    }

    /// A refusal about the pool (credentials, topic, server), not one device.
    private static func isPoolError(_ reason: APNsReason) -> Bool {
        ProviderErrorBook.apnsAuthReasons.contains(reason) || [.badTopic, .topicDisallowed, .tooManyProviderTokenUpdates].contains(reason)
    }

    public func shutdown() async {
        for client in clients + retirement.takeAll() { await client.shutdown() }
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
        return APNsGateway(
            routes: [Route(bundleIDs: ["*"], environment: nil, client: client, name: "bundled simulator")], simulator: simulator)
    }
}

// The gateway as the APNs adapter's routing: it hands out the client for a
// bundle and environment and times every send through it, keeping its books.
extension APNsGateway: APNsRouting {}
