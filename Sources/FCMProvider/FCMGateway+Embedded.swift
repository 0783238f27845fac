import FCM
public import FCMSimulation
public import Logging
import TLSTransport

/// What the bundled FCM simulator is told at start (`--fcm-sim-…` flags).
public struct FCMSimulatorSetup: Sendable {
    /// Tokens answered 404 UNREGISTERED.
    public var unregistered: [String] = []
    /// Tokens answered 403 SENDER_ID_MISMATCH.
    public var otherSender: [String] = []
    /// Faults for the next requests, in order, each for `count` requests.
    public var faults: [(fault: FCMFault, count: Int)] = []
    /// Where accepted messages are appended as JSON lines (`--sim-record`).
    public var recordTo: String?

    public init() {}
}

extension FCMGateway {
    /// The bundled simulator's Firebase project and service account.
    public static let simulatorProject = "herald-sim"
    static let simulatorClientEmail = "herald@herald-sim.iam.gserviceaccount.com"
    static let simulatorKeyID = "heraldsim1"

    /// Starts the bundled FCM simulator on 127.0.0.1 (a free port, a fresh
    /// self-signed certificate, a fresh RSA key whose public half its token
    /// endpoint verifies, an in-memory service account for
    /// ``simulatorProject``) and one client for every bundle.
    public static func embedded(
        setup: FCMSimulatorSetup = FCMSimulatorSetup(), ratePerMinute: Int = 600_000, logger: Logger
    ) async throws -> FCMGateway {
        let key = try RSAPrivateKey.generate()
        var configuration = FCMSimulatorConfiguration(accounts: [FCMSimulatedAccount(
            projectID: simulatorProject, clientEmail: simulatorClientEmail, privateKeyID: simulatorKeyID,
            publicKeyPEM: key.publicKeyPEM)])
        configuration.recordTo = setup.recordTo
        // Deliveries reach `--sim-record`; an in-memory record of every one would grow without bound.
        configuration.keepAccepted = false
        let simulator = try FCMSimulator(configuration: configuration, logger: logger)
        for token in setup.unregistered { simulator.setToken(token, project: simulatorProject, state: .unregistered) }
        for token in setup.otherSender { simulator.setToken(token, project: simulatorProject, state: .otherSender) }
        for entry in setup.faults { simulator.inject(entry.fault, count: entry.count) }
        let port = try await simulator.start()
        do {
            let account = FCMServiceAccount(
                projectID: simulatorProject, clientEmail: simulatorClientEmail, privateKeyID: simulatorKeyID,
                privateKeyPEM: key.pkcs8PEM, tokenURI: simulator.tokenURL)
            var clientConfiguration = FCMClientConfiguration(
                serviceAccount: account, endpoint: FCMEndpoint(host: "127.0.0.1", port: port), ratePerMinute: ratePerMinute)
            clientConfiguration.caPEM = simulator.certificatePEM
            let client = try FCMClient(configuration: clientConfiguration, logger: logger)
            logger.info("no FCM route configured: delivering Android messages to the bundled FCM simulator",
                        metadata: ["endpoint": "127.0.0.1:\(port)", "project": "\(simulatorProject)"])
            return FCMGateway(
                routes: [Route(bundleIDs: ["*"], projectID: simulatorProject, client: client, endpoint: "127.0.0.1:\(port)",
                               name: "bundled FCM simulator")],
                simulator: simulator)
        } catch {
            await simulator.shutdown()
            throw error
        }
    }
}
