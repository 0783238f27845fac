import APNs
import APNsSimulation
import Foundation
import HeraldPrimitives
import HeraldTestSupport
import NIOCore
import Synchronization
import TLSTransport

/// A signing key for a test team, and the simulator config that trusts it.
struct TestKey {
    let keyID = "KEY1234567"
    let teamID = "TEAM123456"
    let privateKeyPEM: String
    let publicKeyPEM: String

    init() throws {
        let key = try PrivateKey.generateP256()
        privateKeyPEM = try key.privateKeyPEM()
        publicKeyPEM = try key.publicKeyPEM()
    }
}

let testCertificate: SelfSignedCertificate = {
    // One certificate for the whole suite: generation is cheap, but restarts need the same one.
    try! SelfSignedCertificate.generate()
}()

func simulatorConfiguration(_ key: TestKey, port: Int = 0) -> APNsSimulatorConfiguration {
    var configuration = APNsSimulatorConfiguration()
    configuration.port = port
    configuration.certificatePEM = testCertificate.certificatePEM
    configuration.keyPEM = testCertificate.keyPEM
    configuration.keyID = key.keyID
    configuration.teamID = key.teamID
    configuration.publicKeyPEM = key.publicKeyPEM
    configuration.allowedTopics = ["com.example.app", "com.example.app.voip"]
    return configuration
}

func clientConfiguration(_ key: TestKey, simulator: APNsSimulator, clock: (any APNsClock)? = nil) -> APNsClientConfiguration {
    var configuration = APNsClientConfiguration(
        endpoint: APNsEndpoint(host: "127.0.0.1", port: simulator.port),
        credentials: .token(keyID: key.keyID, teamID: key.teamID, privateKeyPEM: key.privateKeyPEM))
    configuration.trustedCAPEM = simulator.caCertificatePEM
    if let clock { configuration.clock = clock }
    return configuration
}

let deviceToken = String(repeating: "ab", count: 32)

func token(_ index: Int) -> String {
    String(repeating: String(format: "%02x", index % 256), count: 31) + String(format: "%02x", index / 256 % 256)
}

func alertRequest(
    token: String = deviceToken, priority: String = "10", pushType: String = "alert", topic: String? = "com.example.app",
    expiration: String = "0", collapseID: String? = nil, apnsID: String? = UUID().uuidString.lowercased(),
    payload: String = #"{"aps":{"alert":{"title":"Hi","body":"There"}}}"#, deadline: Timestamp? = nil
) -> APNsRequest {
    var headers: [(name: String, value: String)] = [("apns-push-type", pushType)]
    if let topic { headers.append(("apns-topic", topic)) }
    headers.append(("apns-priority", priority))
    headers.append(("apns-expiration", expiration))
    if let collapseID { headers.append(("apns-collapse-id", collapseID)) }
    if let apnsID { headers.append(("apns-id", apnsID)) }
    return APNsRequest(deviceToken: token, headers: headers, payload: Array(payload.utf8), deadline: deadline)
}
