import Foundation
@testable import APNs
import Testing
import TLSTransport

@Suite("APNs values")
struct APNsValueTests {
    @Test("Reconnect backoff: 1 s doubling, capped at 60 s")
    func reconnectBackoff() {
        let backoff = APNsBackoff(initial: .seconds(1), maximum: .seconds(60))
        #expect((1...8).map { backoff.delay(afterFailures: $0) } == [1, 2, 4, 8, 16, 32, 60, 60].map { .seconds($0) })
    }

    @Test("Error bodies parse; unknown reasons are kept; garbage is tolerated")
    func parseBodies() {
        let gone = APNsResponse.parse(status: 410, apnsID: "x", body: Array(#"{"reason":"Unregistered","timestamp":1700000000123}"#.utf8))
        #expect(gone.reason == .unregistered)
        #expect(gone.timestampMilliseconds == 1_700_000_000_123)
        let novel = APNsResponse.parse(status: 400, apnsID: nil, body: Array(#"{"reason":"SomethingNew"}"#.utf8))
        #expect(novel.reason?.rawValue == "SomethingNew")
        #expect(APNsReason.documented[novel.reason!] == nil)
        let garbage = APNsResponse.parse(status: 500, apnsID: nil, body: [0xff, 0x00, 0x7b])
        #expect(garbage.status == 500 && garbage.reason == nil)
        #expect(APNsReason.documented[.payloadTooLarge] == 413)
        #expect(APNsReason.documented.count == 32)
    }

    @Test("ES256 signatures are 64 raw bytes and verify")
    func es256() throws {
        let key = try PrivateKey.generateP256()
        let message = Array("header.claims".utf8)
        let signature = try ES256.sign(message, with: key)
        #expect(signature.count == 64)
        let publicKey = try PrivateKey.publicKey(pem: key.publicKeyPEM())
        #expect(ES256.verify(signature, over: message, with: publicKey))
        #expect(!ES256.verify(signature, over: Array("other".utf8), with: publicKey))
    }

    @Test("A key that is not EC P-256 is a configuration error")
    func badKey() {
        #expect(throws: APNsError.self) {
            _ = try APNsTokenSigner(keyID: "K", teamID: "T", privateKeyPEM: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
        }
    }
}

@Suite("PKCS#12 identities")
struct PKCS12Tests {
    @Test("A .p12 exported by openssl opens to the same certificate and key")
    func openP12() throws {
        let identity = try SelfSignedCertificate.generate(commonName: "Apple Push Services: com.example.app")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("p12-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let certificate = directory.appendingPathComponent("cert.pem")
        let key = directory.appendingPathComponent("key.pem")
        let bundle = directory.appendingPathComponent("identity.p12")
        try identity.certificatePEM.write(to: certificate, atomically: false, encoding: .utf8)
        try identity.keyPEM.write(to: key, atomically: false, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["pkcs12", "-export", "-in", certificate.path, "-inkey", key.path,
                             "-out", bundle.path, "-passout", "pass:secret"]
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0)
        let der = Array(try Data(contentsOf: bundle))
        let opened = try PKCS12Bundle.pem(fromDER: der, password: "secret")
        #expect(opened.certificatePEM == identity.certificatePEM)
        #expect(opened.keyPEM == identity.keyPEM)
        #expect(throws: TLSError.self) { _ = try PKCS12Bundle.pem(fromDER: der, password: "wrong") }
        _ = try APNsClient(configuration: APNsClientConfiguration(
            endpoint: .sandbox, credentials: .pkcs12(der: der, password: "secret")))
    }
}
