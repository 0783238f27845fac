import Foundation
import HeraldTestSupport
import Testing
import TLSTransport

/// One 2048-bit key for the suite (generation costs tens of milliseconds).
let sharedRSAKey: RSAPrivateKey = try! RSAPrivateKey.generate()

extension FCMTestSuites {
    @Suite struct RS256Tests {
        @Test func signThenVerifyRoundTrips() throws {
            let data = Array("header.claims".utf8)
            let signature = try sharedRSAKey.signRS256(data)
            #expect(signature.count == 256)
            let publicKey = try RSAPublicKey(pem: sharedRSAKey.publicKeyPEM)
            #expect(publicKey.verifyRS256(signature: signature, data: data))
            // RSASSA-PKCS1-v1_5 is deterministic.
            #expect(try sharedRSAKey.signRS256(data) == signature)
        }

        @Test func corruptedSignatureOrDataIsRejected() throws {
            let data = Array("some signing input".utf8)
            let signature = try sharedRSAKey.signRS256(data)
            let publicKey = try RSAPublicKey(pem: sharedRSAKey.publicKeyPEM)
            var flipped = signature
            flipped[100] ^= 0x01
            #expect(!publicKey.verifyRS256(signature: flipped, data: data))
            #expect(!publicKey.verifyRS256(signature: signature, data: data + [0]))
            #expect(!publicKey.verifyRS256(signature: Array(signature.dropLast()), data: data))
            #expect(!publicKey.verifyRS256(signature: [], data: data))
            let other = try RSAPublicKey(pem: RSAPrivateKey.generate().publicKeyPEM)
            #expect(!other.verifyRS256(signature: signature, data: data))
        }

        @Test func pkcs8AndPKCS1PEMBothLoad() throws {
            let pkcs8 = sharedRSAKey.pkcs8PEM
            #expect(pkcs8.hasPrefix("-----BEGIN PRIVATE KEY-----"))
            let reloaded = try RSAPrivateKey(pem: pkcs8)
            let data = Array("x".utf8)
            #expect(try reloaded.signRS256(data) == sharedRSAKey.signRS256(data))
            // PKCS#1 from the openssl command line.
            let directory = try makeTemporaryDirectory(prefix: "fcm-rs256")
            defer { removeTemporaryDirectory(directory) }
            try pkcs8.write(toFile: directory + "/key.pem", atomically: false, encoding: .utf8)
            let pkcs1 = try runOpenSSL(["pkey", "-in", directory + "/key.pem", "-traditional"])
            #expect(pkcs1.hasPrefix("-----BEGIN RSA PRIVATE KEY-----"))
            #expect(try RSAPrivateKey(pem: pkcs1).signRS256(data) == sharedRSAKey.signRS256(data))
        }

        @Test func signatureVerifiesWithTheOpenSSLCommandLine() throws {
            let directory = try makeTemporaryDirectory(prefix: "fcm-rs256")
            defer { removeTemporaryDirectory(directory) }
            let data = Array(#"{"alg":"RS256"}.{"iss":"a@b"}"#.utf8)
            let signature = try sharedRSAKey.signRS256(data)
            try sharedRSAKey.publicKeyPEM.write(toFile: directory + "/pub.pem", atomically: false, encoding: .utf8)
            try Data(data).write(to: URL(fileURLWithPath: directory + "/data"))
            try Data(signature).write(to: URL(fileURLWithPath: directory + "/sig"))
            let output = try runOpenSSL(["dgst", "-sha256", "-verify", directory + "/pub.pem", "-signature", directory + "/sig", directory + "/data"])
            #expect(output.contains("Verified OK"))
            var bad = signature
            bad[0] ^= 0xff
            try Data(bad).write(to: URL(fileURLWithPath: directory + "/sig"))
            #expect(throws: (any Error).self) {
                _ = try runOpenSSL(["dgst", "-sha256", "-verify", directory + "/pub.pem", "-signature", directory + "/sig", directory + "/data"])
            }
        }

        @Test func hostilePEMGivesClearErrors() throws {
            func message(_ pem: String) -> String {
                do {
                    _ = try RSAPrivateKey(pem: pem)
                    return "accepted"
                } catch let error as TLSError {
                    return error.description
                } catch {
                    return "\(error)"
                }
            }
            #expect(message("garbage").contains("not a PEM RSA private key"))
            #expect(message("").contains("not a PEM RSA private key"))
            let pem = sharedRSAKey.pkcs8PEM
            let truncated = String(pem.prefix(pem.count / 2))
            #expect(message(truncated).contains("not a readable PEM RSA private key"))
            let ec = try PrivateKey.generateP256().privateKeyPEM()
            #expect(message(ec).contains("is not an RSA key"))
            #expect(message(pem + "\0").contains("NUL"))
            #expect(message(String(repeating: "A", count: 100_000)).contains("too large"))
            // Base64 body corrupted in the middle.
            var lines = pem.split(separator: "\n").map(String.init)
            lines[3] = String(repeating: "!", count: lines[3].count)
            #expect(message(lines.joined(separator: "\n")).contains("not a readable"))
            // A public key is not a private key; a private key is not a public key.
            #expect(message(sharedRSAKey.publicKeyPEM).contains("not a PEM RSA private key"))
            #expect(throws: TLSError.self) { try RSAPublicKey(pem: pem) }
            #expect(throws: TLSError.self) { try RSAPublicKey(pem: PrivateKey.generateP256().publicKeyPEM()) }
            #expect(throws: TLSError.self) { try RSAPrivateKey.generate(bits: 512) }
        }

        @Test func smallAndEncryptedKeysAreRefused() throws {
            let directory = try makeTemporaryDirectory(prefix: "fcm-rs256")
            defer { removeTemporaryDirectory(directory) }
            let small = try runOpenSSL(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"])
            #expect(throws: TLSError.self) { try RSAPrivateKey(pem: small) }
            try sharedRSAKey.pkcs8PEM.write(toFile: directory + "/key.pem", atomically: false, encoding: .utf8)
            let encrypted = try runOpenSSL(["pkey", "-in", directory + "/key.pem", "-aes256", "-passout", "pass:secret"])
            #expect(encrypted.contains("ENCRYPTED"))
            #expect(throws: TLSError.self) { try RSAPrivateKey(pem: encrypted) }
        }
    }
}

struct CommandFailed: Error { var status: Int32; var output: String }

/// Runs `openssl` with `arguments`; returns its standard output, throws on a non-zero exit.
func runOpenSSL(_ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["openssl"] + arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = Pipe()
    try process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let text = String(decoding: output, as: UTF8.self)
    guard process.terminationStatus == 0 else { throw CommandFailed(status: process.terminationStatus, output: text) }
    return text
}
