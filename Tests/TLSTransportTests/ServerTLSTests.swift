import NIOCore
import NIOPosix
import Synchronization
import TLSTransport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `ServerTLS` and the server side of `OpenSSLHandler` on real loopback
/// sockets: what a bad key file, a foreign client certificate or no client
/// certificate meet (refusals first), then the handshakes that work.
@Suite struct ServerTLSTests {
    static let pki = Result { try DevelopmentCertificates.generate() }
    static let otherPKI = Result { try DevelopmentCertificates.generate() }

    // MARK: - Files

    @Test func aKeyReadableByGroupOrOthersIsRefusedNamingIt() throws {
        let pki = try Self.pki.get()
        let directory = try TemporaryDirectory()
        let cert = try directory.write("server.crt", pki.serverCertificatePEM, mode: 0o644)
        for mode: mode_t in [0o640, 0o644, 0o604] {
            let key = try directory.write("server.key", pki.serverKeyPEM, mode: mode)
            let error = #expect(throws: TLSError.self) { try ServerTLS(files: .init(certificate: cert, key: key)) }
            #expect(error?.message.contains(key) == true && error?.message.contains("readable by group or others") == true,
                    "\(String(describing: error))")
        }
        let key = try directory.write("server.key", pki.serverKeyPEM, mode: 0o600)
        #expect(throws: Never.self) { try ServerTLS(files: .init(certificate: cert, key: key)) }
    }

    @Test func aKeyThatIsNotTheCertificatesIsRefusedNamingBoth() throws {
        let pki = try Self.pki.get()
        let directory = try TemporaryDirectory()
        let cert = try directory.write("server.crt", pki.serverCertificatePEM, mode: 0o644)
        let key = try directory.write("client.key", pki.clientKeyPEM, mode: 0o600)
        let error = #expect(throws: TLSError.self) { try ServerTLS(files: .init(certificate: cert, key: key)) }
        #expect(error?.message.contains("does not match") == true && error?.message.contains(key) == true
                && error?.message.contains(cert) == true, "\(String(describing: error))")
    }

    @Test func aMissingOrEmptyFileIsRefusedNamingIt() throws {
        let pki = try Self.pki.get()
        let directory = try TemporaryDirectory()
        let key = try directory.write("server.key", pki.serverKeyPEM, mode: 0o600)
        let empty = try directory.write("empty.crt", "", mode: 0o644)
        for cert in [directory.path + "/absent.crt", empty] {
            let error = #expect(throws: TLSError.self) { try ServerTLS(files: .init(certificate: cert, key: key)) }
            #expect(error?.message.contains(cert) == true, "\(String(describing: error))")
        }
    }

    @Test func aFailedReloadKeepsTheCredentialsInForce() throws {
        let pki = try Self.pki.get()
        let other = try Self.otherPKI.get()
        let directory = try TemporaryDirectory()
        let cert = try directory.write("server.crt", pki.serverCertificatePEM, mode: 0o644)
        let key = try directory.write("server.key", pki.serverKeyPEM, mode: 0o600)
        let tls = try ServerTLS(files: .init(certificate: cert, key: key))
        let before = tls.summary.serial
        _ = try directory.write("server.crt", other.serverCertificatePEM, mode: 0o644)  // key not swapped: a mismatch
        #expect(throws: TLSError.self) { try tls.reload() }
        #expect(tls.summary.serial == before)
        _ = try directory.write("server.key", other.serverKeyPEM, mode: 0o600)
        let after = try tls.reload()
        #expect(after.serial != before && tls.summary.serial == after.serial)
    }

    // MARK: - Handshakes on loopback

    @Test func mtlsRefusesAClientWithoutACertificateAtTheHandshake() async throws {
        let pki = try Self.pki.get()
        try await withServer(mtls: true) { port, outcomes in
            let client = try TLSContext.client(trustedCAPEM: pki.caCertificatePEM)
            try await connect(port: port, tls: client)
            // The server's verdict, at its handshake: not a mere close.
            let outcome = try await outcomes.next()
            #expect(outcome.hasPrefix("failed") && outcome.contains("certificate"), "\(outcome)")
        }
    }

    @Test func mtlsRefusesAClientCertificateFromAnotherCA() async throws {
        let pki = try Self.pki.get()
        let other = try Self.otherPKI.get()
        try await withServer(mtls: true) { port, outcomes in
            let client = try TLSContext.client(
                trustedCAPEM: pki.caCertificatePEM, clientCertificatePEM: other.clientCertificatePEM, clientKeyPEM: other.clientKeyPEM)
            try await connect(port: port, tls: client)
            // The server's verdict, at its handshake: not a mere close.
            let outcome = try await outcomes.next()
            #expect(outcome.hasPrefix("failed") && outcome.contains("certificate"), "\(outcome)")
        }
    }

    @Test func aClientThatNeverHandshakesIsClosedByTheHandshakeTimeout() async throws {
        try await withServer(mtls: false, handshakeTimeout: .milliseconds(300)) { port, outcomes in
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: port).get()
            // Closed by the server: the close future completes without our doing.
            try await withTimeout(.seconds(20)) { try await channel.closeFuture.get() }
            let outcome = try await outcomes.next()
            #expect(outcome.contains("timed out"), "\(outcome)")
        }
    }

    @Test func mtlsAcceptsTheRightClientCertificate() async throws {
        let pki = try Self.pki.get()
        try await withServer(mtls: true) { port, outcomes in
            let client = try TLSContext.client(
                trustedCAPEM: pki.caCertificatePEM, clientCertificatePEM: pki.clientCertificatePEM, clientKeyPEM: pki.clientKeyPEM)
            try await connect(port: port, tls: client)
            let outcome = try await outcomes.next()
            #expect(outcome == "completed h2 herald-dev-client", "\(outcome)")
        }
    }

    @Test func theServerCertificateVerifiesForEveryLoopbackName() async throws {
        let pki = try Self.pki.get()
        try await withServer(mtls: false) { port, outcomes in
            for name in ["localhost", "127.0.0.1"] {
                let client = try TLSContext.client(trustedCAPEM: pki.caCertificatePEM)
                let result = try await connect(port: port, tls: client, serverName: name)
                #expect(result == "completed h2", "\(name): \(result)")
                #expect(try await outcomes.next() == "completed h2 -")
            }
            let client = try TLSContext.client(trustedCAPEM: pki.caCertificatePEM)
            let wrongName = try await connect(port: port, tls: client, serverName: "example.com")
            #expect(wrongName.hasPrefix("failed"), "\(wrongName)")
        }
    }

    // MARK: - Harness

    /// Runs `body` with a TLS server on a loopback port whose connections
    /// report their handshake's outcome.
    private func withServer(
        mtls: Bool, handshakeTimeout: Duration = .seconds(10), _ body: (Int, Outcomes) async throws -> Void
    ) async throws {
        let pki = try Self.pki.get()
        let directory = try TemporaryDirectory()
        let cert = try directory.write("server.crt", pki.serverCertificatePEM, mode: 0o644)
        let key = try directory.write("server.key", pki.serverKeyPEM, mode: 0o600)
        let ca = try directory.write("ca.crt", pki.caCertificatePEM, mode: 0o644)
        let tls = try ServerTLS(files: .init(certificate: cert, key: key, clientCA: mtls ? ca : nil))
        let outcomes = Outcomes()
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(tls.makeHandler(for: .http2, handshakeTimeout: handshakeTimeout))
                    try channel.pipeline.syncOperations.addHandler(OutcomeRecorder(report: { outcomes.add($0) }))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        do {
            try await body(server.localAddress?.port ?? 0, outcomes)
        } catch {
            try? await server.close()
            throw error
        }
        try await server.close()
    }

    /// Connects with `tls`; returns the client's view: "completed ALPN" or "failed …".
    @discardableResult
    private func connect(port: Int, tls: TLSContext, serverName: String = "127.0.0.1") async throws -> String {
        let result = Mutex<String?>(nil)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(OpenSSLHandler(context: tls, serverName: serverName))
                    try channel.pipeline.syncOperations.addHandler(OutcomeRecorder(report: { outcome in
                        result.withLock { if $0 == nil { $0 = outcome } }
                    }))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        // The client's handshake ends (TLS 1.3: before the server has checked
        // its certificate) or fails; either way wait for an outcome, then close.
        let deadline = ContinuousClock.now + .seconds(20)
        while result.withLock({ $0 }) == nil && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        try? await channel.close()
        return result.withLock { $0 } ?? "no outcome"
    }
}

/// The outcomes of handshakes, in order.
final class Outcomes: Sendable {
    private let items = Mutex<[String]>([])
    private let taken = Mutex(0)

    func add(_ outcome: String) { items.withLock { $0.append(outcome) } }

    /// The next outcome, waited for with a bounded deadline.
    func next() async throws -> String {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            let index = taken.withLock { $0 }
            if let item = items.withLock({ $0.count > index ? $0[index] : nil }) {
                taken.withLock { $0 += 1 }
                return item
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        return "none within 20 s"
    }
}

/// Reports "completed ALPN SUBJECT-CN" on the handshake event, or "failed …"
/// on an error or a close before it.
final class OutcomeRecorder: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    private let report: @Sendable (String) -> Void
    private var reported = false

    init(report: @escaping @Sendable (String) -> Void) { self.report = report }

    private func once(_ outcome: String) {
        guard !reported else { return }
        reported = true
        report(outcome)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let done = event as? TLSHandshakeCompleted {
            let subject = done.peerCertificateSubject.map { subject in
                subject.split(separator: "/").first { $0.hasPrefix("CN=") }.map { String($0.dropFirst(3)) } ?? subject
            }
            once("completed \(done.alpnProtocol)" + (context.channel.parent != nil ? " \(subject ?? "-")" : ""))
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        once("failed \(error)")
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        once("failed: closed")
        context.fireChannelInactive()
    }
}

struct TimedOut: Error {}

func withTimeout(_ limit: Duration, _ body: @escaping @Sendable () async throws -> Void) async throws {
    try await withThrowingTaskGroup(of: Bool.self) { group in
        group.addTask { try await body(); return true }
        group.addTask { try await Task.sleep(for: limit); return false }
        let finished = try await group.next() ?? false
        group.cancelAll()
        if !finished { throw TimedOut() }
    }
}

/// A fresh directory under /tmp, removed with its files at deinit.
final class TemporaryDirectory {
    let path: String

    init() throws {
        var template = Array("/tmp/herald-tls-test-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ buffer in buffer.baseAddress.flatMap { mkdtemp($0) } }) else {
            throw TimedOut()
        }
        path = String(cString: made)
    }

    /// Writes `text` to `name` with exactly `mode`; returns the path.
    func write(_ name: String, _ text: String, mode: mode_t) throws -> String {
        let file = path + "/" + name
        unlink(file)
        let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, mode)
        guard fd >= 0 else { throw TimedOut() }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == bytes.count || bytes.isEmpty,
              fchmod(fd, mode) == 0 else { throw TimedOut() }
        return file
    }

    deinit {
        for name in ["server.crt", "server.key", "client.key", "ca.crt", "empty.crt"] { unlink(path + "/" + name) }
        rmdir(path)
    }
}
