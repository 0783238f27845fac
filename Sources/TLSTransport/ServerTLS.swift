import CInterop
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A server's TLS credentials read from files, swapped as a whole on reload.
///
/// Holds two contexts over the same certificate and key: one for an HTTP/2
/// listener (ALPN `h2` required) and one for an HTTP/1.1 listener (ALPN
/// `http/1.1` or none). A connection takes the contexts in force when it is
/// accepted and keeps them; `reload()` changes only what later connections get.
public final class ServerTLS: Sendable {
    /// Where the credentials come from.
    public struct Files: Sendable, Equatable {
        /// PEM: the leaf certificate first, then any intermediates.
        public var certificate: String
        /// PEM private key (PKCS#8 or SEC1); must not be readable by group or others.
        public var key: String
        /// PEM CAs that issue client certificates: set, a client must present
        /// one they issued (mTLS).
        public var clientCA: String?

        public init(certificate: String, key: String, clientCA: String? = nil) {
            self.certificate = certificate
            self.key = key
            self.clientCA = clientCA
        }
    }

    /// What a listener's connections use.
    public enum Listener: Sendable {
        /// HTTP/2 (gRPC): ALPN `h2` required.
        case http2
        /// HTTP/1.1 (the admin listener).
        case http1
        /// The gRPC port serving HTTP/1.1 beside gRPC: ALPN `h2` or
        /// `http/1.1` required (the first bytes then pick the handler).
        case http2OrHTTP1
    }

    /// The leaf certificate in force, for logs.
    public struct Summary: Sendable, CustomStringConvertible {
        /// Hex serial number.
        public var serial: String
        public var subject: String
        public var notAfter: String

        public var description: String { "serial \(serial), subject \(subject), not after \(notAfter)" }
    }

    private struct Contexts {
        var http2: TLSContext
        var http1: TLSContext
        var http2OrHTTP1: TLSContext
        var summary: Summary
    }

    public let files: Files
    private let contexts: Mutex<Contexts>

    /// Reads and checks the files (the key's permissions, that key and
    /// certificate match, that the certificate has not expired); each error
    /// names its file.
    public init(files: Files) throws(TLSError) {
        self.files = files
        contexts = Mutex(try Self.load(files))
    }

    /// Reads the files again and, when they are good, makes later connections
    /// use them (connections already open keep theirs); when not, throws and
    /// the credentials in force stay.
    @discardableResult
    public func reload() throws(TLSError) -> Summary {
        let fresh = try Self.load(files)
        contexts.withLock { $0 = fresh }
        return fresh.summary
    }

    /// The certificate in force.
    public var summary: Summary { contexts.withLock { $0.summary } }

    /// The context new connections of `listener` use now.
    public func context(for listener: Listener) -> TLSContext {
        contexts.withLock { contexts in
            switch listener {
            case .http2: contexts.http2
            case .http1: contexts.http1
            case .http2OrHTTP1: contexts.http2OrHTTP1
            }
        }
    }

    /// A handler for one accepted connection of `listener` with the credentials
    /// in force; the connection is closed when its handshake has not finished
    /// within `handshakeTimeout`.
    public func makeHandler(for listener: Listener, handshakeTimeout: Duration) throws -> OpenSSLHandler {
        try OpenSSLHandler(
            context: context(for: listener), handshakeTimeout: handshakeTimeout, requireH2: listener == .http2,
            allowedALPN: listener == .http2OrHTTP1 ? ["h2", "http/1.1"] : nil)
    }

    private static func load(_ files: Files) throws(TLSError) -> Contexts {
        let keyPEM = try readSecret(files.key)
        let certificatePEM = try readFile(files.certificate, what: "TLS certificate")
        let chain: [X509Certificate]
        do { chain = try X509Certificate.chain(fromPEM: certificatePEM) } catch {
            throw TLSError(.configuration, "TLS certificate \(files.certificate): \(error)")
        }
        guard let leaf = chain.first else {
            throw TLSError(.configuration, "TLS certificate \(files.certificate): no PEM certificate in it")
        }
        let summary = describe(leaf)
        // X509_cmp_current_time: -1 when notAfter is before now; 0 on an unparsable time.
        let expiry = X509_cmp_current_time(X509_get0_notAfter(leaf.pointer))
        guard expiry > 0 else {
            throw TLSError(.configuration, "TLS certificate \(files.certificate) "
                + (expiry == 0 ? "has an unreadable expiry time" : "expired at \(summary.notAfter)"))
        }
        do { _ = try PrivateKey(pem: keyPEM) } catch {
            throw TLSError(.configuration, "TLS key \(files.key): not a PEM private key")
        }
        var clientCertificates = TLSContext.ClientCertificates.none
        if let caPath = files.clientCA {
            let caPEM = try readFile(caPath, what: "TLS client CA")
            let certificates = (try? X509Certificate.chain(fromPEM: caPEM)) ?? []
            guard !certificates.isEmpty else {
                throw TLSError(.configuration, "TLS client CA \(caPath): no PEM certificate in it")
            }
            clientCertificates = .required(caPEM: caPEM)
        }
        do {
            let http2 = try TLSContext.server(
                certificatePEM: certificatePEM, keyPEM: keyPEM, clientCertificates: clientCertificates, alpn: .h2)
            let http1 = try TLSContext.server(
                certificatePEM: certificatePEM, keyPEM: keyPEM, clientCertificates: clientCertificates, alpn: .http11)
            let http2OrHTTP1 = try TLSContext.server(
                certificatePEM: certificatePEM, keyPEM: keyPEM, clientCertificates: clientCertificates, alpn: .h2OrHTTP11)
            return Contexts(http2: http2, http1: http1, http2OrHTTP1: http2OrHTTP1, summary: summary)
        } catch let error as TLSError where error.message.contains("do not match") {
            throw TLSError(.configuration, "TLS key \(files.key) does not match the certificate in \(files.certificate)")
        } catch {
            throw TLSError(.configuration, "TLS certificate \(files.certificate) / key \(files.key): \(error)")
        }
    }

    private static func describe(_ certificate: X509Certificate) -> Summary {
        var serial = "?"
        if let bignum = ASN1_INTEGER_to_BN(X509_get_serialNumber(certificate.pointer), nil) {
            if let hex = BN_bn2hex(bignum) {
                serial = String(cString: hex)
                CRYPTO_free(hex, #fileID, #line)
            }
            BN_free(bignum)
        }
        var subject = "?"
        if let line = X509_NAME_oneline(X509_get_subject_name(certificate.pointer), nil, 0) {
            subject = String(cString: line)
            CRYPTO_free(line, #fileID, #line)
        }
        var notAfter = "?"
        if let bio = BIO_new(BIO_s_mem()) {
            if ASN1_TIME_print(bio, X509_get0_notAfter(certificate.pointer)) == 1 {
                var bytes = [UInt8](repeating: 0, count: 64)
                let count = BIO_read(bio, &bytes, Int32(bytes.count))
                if count > 0 { notAfter = String(decoding: bytes.prefix(Int(count)), as: UTF8.self) }
            }
            BIO_free(bio)
        }
        return Summary(serial: serial, subject: subject, notAfter: notAfter)
    }

    /// Reads a private key file, refusing one that group or others may read.
    static func readSecret(_ path: String) throws(TLSError) -> String {
        try readFile(path, what: "TLS key", secret: true)
    }

    /// Reads a whole (small) file: one open, fstat, reads to the end.
    static func readFile(_ path: String, what: String, secret: Bool = false) throws(TLSError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw TLSError(.configuration, "\(what) \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw TLSError(.configuration, "\(what) \(path): \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw TLSError(.configuration, "\(what) \(path): not a regular file")
        }
        if secret && info.st_mode & 0o044 != 0 {
            let mode = String(info.st_mode & 0o777, radix: 8)
            throw TLSError(.configuration,
                "\(what) \(path) is readable by group or others (mode 0\(mode)): refusing it; chmod 600 it (owned by the user Herald runs as)")
        }
        guard info.st_size <= 1 << 20 else {
            throw TLSError(.configuration, "\(what) \(path): larger than 1 MiB")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while bytes.count <= 1 << 20 {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw TLSError(.configuration, "\(what) \(path): \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            bytes += chunk.prefix(count)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
