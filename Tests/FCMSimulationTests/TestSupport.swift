import FCMSimulation
import HeraldPrimitives
import Logging
import Synchronization
import TLSTransport

/// A settable clock for the simulator (`configuration.now`).
final class TestClock: Sendable {
    private let current: Mutex<Timestamp>
    init(_ start: Timestamp = .now) { current = Mutex(start) }
    var now: Timestamp { current.withLock { $0 } }
    func advance(seconds: Double) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// One service account with its RSA key (generated once for the suite).
struct TestAccount: Sendable {
    static let project = "herald-test"
    static let email = "sender@herald-test.iam.gserviceaccount.com"
    static let keyID = "0123456789abcdef0123456789abcdef01234567"
    static let key: RSAPrivateKey = try! RSAPrivateKey.generate()
    static let otherKey: RSAPrivateKey = try! RSAPrivateKey.generate()

    static var account: FCMSimulatedAccount {
        FCMSimulatedAccount(projectID: project, clientEmail: email, privateKeyID: keyID, publicKeyPEM: key.publicKeyPEM)
    }

    /// A second project's account (same key, other email and kid).
    static var otherAccount: FCMSimulatedAccount {
        FCMSimulatedAccount(
            projectID: "other-project", clientEmail: "other@other-project.iam.gserviceaccount.com", privateKeyID: "kid-other",
            publicKeyPEM: key.publicKeyPEM)
    }
}

let testLogger = Logger(label: "fcm-simulator-tests")
let testCertificate: SelfSignedCertificate = try! SelfSignedCertificate.generate()
let validToken = "dGVzdC10b2tlbi0x:APA91bH" + String(repeating: "x", count: 140)
let scope = "https://www.googleapis.com/auth/firebase.messaging"

/// The claims of an assertion; each test changes what it tests.
struct Assertion {
    var alg = "RS256"
    var kid = TestAccount.keyID
    var iss = TestAccount.email
    var aud: String
    var scope = "https://www.googleapis.com/auth/firebase.messaging"
    var iat: Int64
    var exp: Int64
    var key: RSAPrivateKey = TestAccount.key

    init(port: Int, now: Timestamp) {
        aud = "https://127.0.0.1:\(port)/token"
        iat = now.seconds
        exp = now.seconds + 3600
    }

    func jwt() throws -> String {
        var header = JSONWriter()
        header.writeLenient(.object(["alg": .string(alg), "kid": .string(kid), "typ": "JWT"]))
        var claims = JSONWriter()
        claims.writeLenient(.object([
            "iss": .string(iss), "aud": .string(aud), "scope": .string(scope),
            "iat": .number(Double(iat)), "exp": .number(Double(exp)),
        ]))
        let input = Base64.encode(header.bytes, url: true) + "." + Base64.encode(claims.bytes, url: true)
        let signature = try key.signRS256(Array(input.utf8))
        return input + "." + Base64.encode(signature, url: true)
    }

    var form: [UInt8] {
        get throws { Array("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(try jwt())".utf8) }
    }
}

/// A started simulator, a connected client and a clock.
struct Harness {
    let simulator: FCMSimulator
    let client: H2TestClient
    let clock: TestClock
    let port: Int

    static func start(_ adjust: (inout FCMSimulatorConfiguration) -> Void = { _ in }) async throws -> Harness {
        let clock = TestClock()
        var configuration = FCMSimulatorConfiguration(accounts: [TestAccount.account, TestAccount.otherAccount])
        configuration.certificatePEM = testCertificate.certificatePEM
        configuration.keyPEM = testCertificate.keyPEM
        configuration.now = { clock.now }
        adjust(&configuration)
        let simulator = try FCMSimulator(configuration: configuration, logger: testLogger)
        let port = try await simulator.start()
        let client = try await H2TestClient.connect(port: port, trusting: simulator.certificatePEM)
        return Harness(simulator: simulator, client: client, clock: clock, port: port)
    }

    func assertion() -> Assertion { Assertion(port: port, now: clock.now) }

    func requestToken(_ assertion: Assertion) async throws -> H2Response {
        try await client.request(
            path: "/token", headers: [("content-type", "application/x-www-form-urlencoded")], body: try assertion.form)
    }

    /// A fresh access token for the test account's project (or the other one).
    func accessToken(other: Bool = false) async throws -> String {
        var assertion = assertion()
        if other {
            assertion.kid = TestAccount.otherAccount.privateKeyID
            assertion.iss = TestAccount.otherAccount.clientEmail
        }
        let response = try await requestToken(assertion)
        guard response.status == 200, let token = json(response)?["access_token"]?.stringValue else {
            throw H2TestError.handshake("no access token: \(response.status) \(response.text)")
        }
        return token
    }

    func send(_ body: String, token: String?, project: String = TestAccount.project) async throws -> H2Response {
        try await client.send(project: project, accessToken: token, body: body)
    }

    func stop() async {
        await client.close()
        await simulator.shutdown()
    }
}

func json(_ response: H2Response) -> JSONObject? {
    (try? JSONParser.parse(response.body))?.objectValue
}

/// `error.status`, `error.message` and the FcmError `errorCode` of a Google error answer.
func googleError(_ response: H2Response) -> (status: String?, message: String, errorCode: String?) {
    let error = json(response)?["error"]?.objectValue ?? [:]
    let detail = error["details"]?.arrayValue?.first?.objectValue
    return (error["status"]?.stringValue, error["message"]?.stringValue ?? "", detail?["errorCode"]?.stringValue)
}

/// A message body to `validToken` with `fields` spliced into `message`.
func message(_ fields: String = #""notification":{"title":"Hi","body":"There"}"#, token: String = validToken) -> String {
    #"{"message":{"token":"\#(token)"\#(fields.isEmpty ? "" : ",")\#(fields)}}"#
}
