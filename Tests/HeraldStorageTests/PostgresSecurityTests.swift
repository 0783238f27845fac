import Foundation
@testable import HeraldPostgres
import HeraldStorage
import HeraldTestSupport
import PostgresNIO
import Testing

/// Issue 24 item 6: PostgreSQL connection security. TLS verified by
/// default off loopback; `verify-ca`, `sslrootcert`; the password from a
/// 0600 file instead of the URL (which `ps` shows). Hostile cases first.
@Suite("PostgreSQL connection security: sslmode, sslrootcert, passfile")
struct PostgresSecurityTests {
    private func parse(_ url: String, pgpassfile: String? = nil) throws(PostgresURLError) -> PostgresStoreConfiguration {
        try PostgresStoreConfiguration(url: url, replicaID: "r", passfileEnvironment: pgpassfile)
    }

    /// A password file with `mode`, in a fresh directory.
    private func withPassfile<T>(_ text: String, mode: mode_t = 0o600, _ body: (String) throws -> T) throws -> T {
        try withDirectory { dir in
            let path = dir + "/pgpass"
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            #expect(chmod(path, mode) == 0)
            return try body(path)
        }
    }

    private func withDirectory<T>(_ body: (String) throws -> T) throws -> T {
        let dir = try makeTemporaryDirectory(prefix: "herald-pg-security")
        defer { removeTemporaryDirectory(dir) }
        return try body(dir)
    }

    // MARK: Hostile

    @Test(arguments: [0o644, 0o640, 0o604, 0o660, 0o606] as [mode_t])
    func aPassfileOthersMayReadIsRefusedNamingIt(_ mode: mode_t) throws {
        try withPassfile("*:*:*:*:hunter2\n", mode: mode) { path in
            let attempts: [() throws -> PostgresStoreConfiguration] = [
                { try self.parse("postgres://u@db.example/d?passfile=\(path)") },
                { try self.parse("postgres://u@db.example/d", pgpassfile: path) },
            ]
            for attempt in attempts {
                do {
                    _ = try attempt()
                    Issue.record("a passfile with mode \(String(mode, radix: 8)) was accepted")
                } catch {
                    let text = String(describing: error)
                    #expect(text.contains(path) && text.contains("chmod 600"))
                    #expect(!text.contains("hunter2"))
                }
            }
        }
    }

    @Test func aMissingPassfileOrRootCertificateIsNamed() throws {
        #expect(throws: PostgresURLError.self) { try self.parse("postgres://u@db.example/d?passfile=/nonexistent/pgpass") }
        let config = try parse("postgres://u:p@db.example/d?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem")
        do {
            _ = try config.tlsConfiguration()
            Issue.record("a missing sslrootcert was accepted")
        } catch {
            #expect(error.description.contains("/nonexistent/ca.pem"))
        }
    }

    @Test(arguments: [
        "postgres://u@db.example/d?sslmode=prefer", "postgres://u@db.example/d?sslmode=allow",
        "postgres://u@db.example/d?sslmode=disable&sslrootcert=/ca.pem", "postgres://u@db.example/d?sslrootcert=",
        "postgres://u@db.example/d?passfile=", "postgres://u@localhost/d?host=/run/pg&sslmode=verify-full",
    ])
    func refusesModesThatCouldSilentlyDowngrade(_ url: String) {
        #expect(throws: PostgresURLError.self) { try self.parse(url) }
    }

    @Test func requireSkipsEveryCheckButVerifyModesDoNot() throws {
        #expect(try parse("postgres://u@db.example/d?sslmode=require").tlsConfiguration().certificateVerification == .none)
        #expect(try parse("postgres://u@db.example/d?sslmode=verify-ca").tlsConfiguration().certificateVerification
                == .noHostnameVerification)
        #expect(try parse("postgres://u@db.example/d?sslmode=verify-full").tlsConfiguration().certificateVerification
                == .fullVerification)
        #expect(try parse("postgres://u@db.example/d").tlsConfiguration().certificateVerification == .fullVerification)
        // libpq's rule: require with a root certificate checks the chain.
        try withDirectory { dir in
            let ca = dir + "/ca.pem"
            try Data("not read until a connection".utf8).write(to: URL(fileURLWithPath: ca))
            let tls = try parse("postgres://u@db.example/d?sslmode=require&sslrootcert=\(ca)").tlsConfiguration()
            #expect(tls.certificateVerification == .noHostnameVerification)
            #expect(tls.trustRoots == .file(ca))
            #expect(tls.minimumTLSVersion == .tlsv12)
        }
    }

    // MARK: Defaults and parsing

    @Test(arguments: [
        ("postgres://u@db.example/d", PostgresStoreConfiguration.TLSMode.verifyFull),
        ("postgres://u@10.0.0.5:5432/d", .verifyFull),
        ("postgres://u@127.0.0.1.example.com/d", .verifyFull),
        ("postgres://u@[2001:db8::1]/d", .verifyFull),
        ("postgres://u@127.0.0.1/d", .disable),
        ("postgres://u@127.8.9.10/d", .disable),
        ("postgres://u@localhost/d", .disable),
        ("postgres://u@[::1]:5433/d", .disable),
        ("postgres://u@db.example/d?host=/run/pg", .disable),
        ("postgres://u@db.example/d?sslmode=disable", .disable),
        ("postgres://u@127.0.0.1/d?sslmode=verify-ca", .verifyCA),
    ])
    func sslmodeDefaultsToVerifyFullOffLoopback(_ url: String, _ mode: PostgresStoreConfiguration.TLSMode) throws {
        let config = try parse(url)
        #expect(config.tls == mode)
        #expect(config.redactedURL.contains("sslmode=\(mode.rawValue)"))
    }

    @Test func thePasswordComesFromTheURLThenPassfileThenPGPASSFILE() throws {
        let text = """
            # comment
            other.example:5432:d:u:wrong-host
            db.example:6543:d:u:wrong-port
            db.example:5432:d:u:p\\:a\\\\ss
            *:*:*:*:fallback
            """
        try withPassfile(text) { path in
            let fromFile = try parse("postgres://u@db.example/d?passfile=\(path)")
            #expect(fromFile.password == "p:a\\ss")
            #expect(fromFile.redactedURL == "postgres://u:***@db.example:5432/d?sslmode=verify-full&passfile=\(path)")
            #expect(!fromFile.description.contains("p:a"))
            #expect(try parse("postgres://u@db.example/d", pgpassfile: path).password == "p:a\\ss")
            #expect(try parse("postgres://u@elsewhere.example/x", pgpassfile: path).password == "fallback")
            // The URL's own password wins, and the file is not even read.
            #expect(try parse("postgres://u:url@db.example/d?passfile=\(path)").password == "url")
            // A unix socket matches "localhost", as in libpq.
            #expect(PostgresPassfile.match("localhost:5432:d:u:sock\n*:*:*:*:x", host: "localhost", port: 5432, database: "d", user: "u")
                    == "sock")
            #expect(PostgresPassfile.match("h:1:d:u:x", host: "h", port: 2, database: "d", user: "u") == nil)
        }
    }
}

/// A real `verify-full` connection to the throwaway cluster, with TLS
/// switched on for the test (`ALTER SYSTEM SET ssl = on`; clients without
/// TLS are unaffected) and certificates made by the openssl CLI.
@Suite("PostgreSQL TLS against the test cluster", .storeCaseLimit)
struct PostgresTLSConnectionTests {
    static let clusterDirectory = ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES_DIR"].flatMap { $0.isEmpty ? nil : $0 }

    /// Runs openssl with `arguments`; throws with its output on failure.
    private static func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw StoreError.database("openssl \(arguments.first ?? ""): \(text)") }
    }

    /// A CA (`NAME-ca.pem`, `NAME-ca.key`) in `dir`.
    private static func makeCA(_ name: String, in dir: String) throws {
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                     "-subj", "/CN=\(name) test CA", "-keyout", "\(dir)/\(name)-ca.key", "-out", "\(dir)/\(name)-ca.pem"])
    }

    /// Turns on TLS with a server certificate for `localhost` signed by a
    /// fresh CA; returns that CA's file and another CA's.
    private static func enableTLS() async throws -> (ca: String, otherCA: String) {
        let cluster = try #require(clusterDirectory)
        let dir = cluster + "/tls-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try makeCA("good", in: dir)
        try makeCA("other", in: dir)
        try "subjectAltName=DNS:localhost\n".write(toFile: dir + "/san.ext", atomically: true, encoding: .utf8)
        try openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=localhost",
                     "-keyout", dir + "/server.key", "-out", dir + "/server.csr"])
        try openssl(["x509", "-req", "-in", dir + "/server.csr", "-CA", dir + "/good-ca.pem", "-CAkey", dir + "/good-ca.key",
                     "-CAcreateserial", "-days", "2", "-extfile", dir + "/san.ext", "-out", dir + "/server.pem"])
        // The server (nobody when the tests run as root) must own its key, 0600.
        var owner = stat()
        #expect(stat(cluster, &owner) == 0)
        for file in ["", "/server.key", "/server.pem"] {
            #expect(chown(dir + file, owner.st_uid, owner.st_gid) == 0 || getuid() != 0)
        }
        #expect(chmod(dir + "/server.key", 0o600) == 0)
        #expect(chmod(dir, 0o755) == 0)
        try await PostgresTestDatabase.admin("ALTER SYSTEM SET ssl_cert_file = '\(dir)/server.pem'")
        try await PostgresTestDatabase.admin("ALTER SYSTEM SET ssl_key_file = '\(dir)/server.key'")
        try await PostgresTestDatabase.admin("ALTER SYSTEM SET ssl = on")
        try await PostgresTestDatabase.admin("SELECT pg_reload_conf()")
        return (dir + "/good-ca.pem", dir + "/other-ca.pem")
    }

    /// Connects with `url`'s TLS settings to the test database; throws the
    /// driver's error described.
    private static func connect(_ url: String) async throws {
        let configuration = try PostgresStoreConfiguration(url: url, replicaID: "tls", passfileEnvironment: nil)
        do {
            let connection = try await PostgresConnection.connect(
                configuration: try configuration.connectionConfiguration(), id: 7, logger: Logger(label: "tls-test"))
            let rows = try await connection.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", logger: Logger(label: "tls-test"))
            var encrypted = false
            for try await value in rows.decode(Bool.self) { encrypted = value }
            try await connection.close()
            guard encrypted else { throw StoreError.database("connected without TLS") }
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.database(PostgresErrors.describe(error))
        }
    }

    @Test(.enabled(if: PostgresTLSConnectionTests.clusterDirectory != nil && PostgresTestDatabase.url != nil,
                   "needs the throwaway cluster (HERALD_TEST_POSTGRES_URL and HERALD_TEST_POSTGRES_DIR)"))
    func verifyFullConnectsOnlyToTheServerItsCAVouchesFor() async throws {
        let (ca, otherCA) = try await Self.enableTLS()
        let base = try #require(PostgresTestDatabase.url)
        // The reload is asynchronous: poll (bounded) until TLS is offered.
        let deadline = ContinuousClock.now + .seconds(20)
        var lastError: (any Error)?
        while ContinuousClock.now < deadline {
            do {
                try await Self.connect(base + "?sslmode=require")
                lastError = nil
                break
            } catch {
                lastError = error
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        if let lastError { Issue.record("TLS never came up on the test cluster: \(lastError)"); return }
        // Hostile: a CA that did not sign the server's certificate.
        await #expect(throws: (any Error).self) { try await Self.connect(base + "?sslmode=verify-full&sslrootcert=\(otherCA)") }
        await #expect(throws: (any Error).self) { try await Self.connect(base + "?sslmode=verify-ca&sslrootcert=\(otherCA)") }
        // Without sslrootcert the system's trust store does not know the test CA.
        await #expect(throws: (any Error).self) { try await Self.connect(base + "?sslmode=verify-full") }
        // The right CA but another name (the certificate names localhost only):
        // verify-full refuses, verify-ca (no name check) connects.
        await #expect(throws: (any Error).self) { try await Self.connect(base + "?sslmode=verify-full&sslrootcert=\(ca)") }
        try await Self.connect(base + "?sslmode=verify-ca&sslrootcert=\(ca)")
        // The right CA and the right name.
        let byName = base.replacingOccurrences(of: "@127.0.0.1:", with: "@localhost:")
        try await Self.connect(byName + "?sslmode=verify-full&sslrootcert=\(ca)")
    }
}
