import CInterop

/// An OpenSSL `SSL_CTX` configured for HTTP/2 (TLS 1.2+, ALPN `h2`).
///
/// Immutable after creation, so one context is shared by every connection of a
/// pool (OpenSSL contexts are thread-safe for `SSL_new`).
public final class TLSContext: @unchecked Sendable {
    /// Client or server side.
    public enum Role: Sendable { case client, server }

    let context: OpaquePointer
    public let role: Role

    /// A client context: verifies the server against `trustedCAPEM` / `trustedCAFile`
    /// (or the system store when both are nil), offers ALPN `h2`, and presents an
    /// optional client certificate (APNs certificate auth).
    public static func client(
        trustedCAFile: String? = nil,
        trustedCAPEM: String? = nil,
        clientCertificatePEM: String? = nil,
        clientKeyPEM: String? = nil
    ) throws -> TLSContext {
        let tls = try TLSContext(role: .client)
        SSL_CTX_set_verify(tls.context, SSL_VERIFY_PEER, nil)
        if let file = trustedCAFile {
            guard SSL_CTX_load_verify_locations(tls.context, file, nil) == 1 else {
                throw TLSError(.configuration, "cannot load CA file \(file): \(TLSError.openSSLErrors())")
            }
        }
        if let pem = trustedCAPEM {
            let certificates = try X509Certificate.chain(fromPEM: pem)
            guard !certificates.isEmpty else { throw TLSError(.configuration, "no certificate in CA PEM") }
            let store = SSL_CTX_get_cert_store(tls.context)
            for certificate in certificates {
                // A CA that did not go in would fail every handshake later
                // with a misleading verify error.
                try OpenSSLCall.check("X509_STORE_add_cert") { X509_STORE_add_cert(store, certificate.pointer) }
            }
        }
        if trustedCAFile == nil && trustedCAPEM == nil {
            guard SSL_CTX_set_default_verify_paths(tls.context) == 1 else {
                throw TLSError(.configuration, "cannot load the system CA store: \(TLSError.openSSLErrors())")
            }
        }
        let alpn: [UInt8] = [2, UInt8(ascii: "h"), UInt8(ascii: "2")]
        guard SSL_CTX_set_alpn_protos(tls.context, alpn, UInt32(alpn.count)) == 0 else {
            throw TLSError(.configuration, "cannot set ALPN: \(TLSError.openSSLErrors())")
        }
        if let certificatePEM = clientCertificatePEM, let keyPEM = clientKeyPEM {
            try tls.useCertificate(pem: certificatePEM, keyPEM: keyPEM)
        }
        return tls
    }

    /// A server context presenting `certificatePEM` (leaf first, then chain) and
    /// selecting ALPN `h2` (clients that do not offer it are refused).
    ///
    /// With `requestClientCertificate`, clients may present a certificate
    /// (APNs certificate auth); it is reported, not verified, and not required.
    public static func server(certificatePEM: String, keyPEM: String, requestClientCertificate: Bool = false) throws -> TLSContext {
        try server(
            certificatePEM: certificatePEM, keyPEM: keyPEM,
            clientCertificates: requestClientCertificate ? .requestedUnverified : .none)
    }

    /// What a server context asks of clients' certificates.
    public enum ClientCertificates: Sendable {
        /// None asked for.
        case none
        /// Asked for, reported, not verified, not required (APNs certificate auth in the simulator).
        case requestedUnverified
        /// Required and verified against these CAs (PEM, one or more): mTLS. A
        /// client without one, or with one no CA here issued, fails the handshake.
        case required(caPEM: String)
    }

    /// The protocol a server context selects by ALPN.
    public enum ServerALPN: Sendable {
        /// `h2`; a client that does not offer it fails the handshake.
        case h2
        /// `http/1.1` when the client offers it, else no ALPN (an HTTP/1.1 listener).
        case http11
        /// `h2` when the client offers it, else `http/1.1`; a client offering
        /// neither fails the handshake (the gRPC port with HTTP/1.1 beside it).
        case h2OrHTTP11
    }

    /// A server context: `certificatePEM` (leaf first, then chain), TLS 1.2+,
    /// ALPN per `alpn`, client certificates per `clientCertificates`, and
    /// session resumption (a server-side session cache and TLS tickets).
    public static func server(
        certificatePEM: String, keyPEM: String, clientCertificates: ClientCertificates, alpn: ServerALPN = .h2
    ) throws -> TLSContext {
        let tls = try TLSContext(role: .server)
        try tls.useCertificate(pem: certificatePEM, keyPEM: keyPEM)
        switch clientCertificates {
        case .none:
            break
        case .requestedUnverified:
            SSL_CTX_set_verify(tls.context, SSL_VERIFY_PEER, { _, _ in 1 })
        case .required(let caPEM):
            let certificates = try X509Certificate.chain(fromPEM: caPEM)
            guard !certificates.isEmpty else { throw TLSError(.configuration, "no certificate in the client CA PEM") }
            let store = SSL_CTX_get_cert_store(tls.context)
            for certificate in certificates {
                try OpenSSLCall.check("X509_STORE_add_cert") { X509_STORE_add_cert(store, certificate.pointer) }
                // Named in the CertificateRequest, so a client picks the right certificate.
                try OpenSSLCall.check("SSL_CTX_add_client_CA") { SSL_CTX_add_client_CA(tls.context, certificate.pointer) }
            }
            SSL_CTX_set_verify(tls.context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        }
        // Resumption: OpenSSL's server session cache is on by default, and TLS
        // 1.2 and 1.3 tickets too; a session ID context is what lets a session
        // of a verified client be resumed (without one OpenSSL refuses it).
        let sessionContext = Array("herald".utf8)
        try OpenSSLCall.check("SSL_CTX_set_session_id_context") {
            SSL_CTX_set_session_id_context(tls.context, sessionContext, UInt32(sessionContext.count))
        }
        switch alpn {
        case .h2: SSL_CTX_set_alpn_select_cb(tls.context, selectH2, nil)
        case .http11: SSL_CTX_set_alpn_select_cb(tls.context, selectHTTP11, nil)
        case .h2OrHTTP11: SSL_CTX_set_alpn_select_cb(tls.context, selectH2OrHTTP11, nil)
        }
        return tls
    }

    private init(role: Role) throws {
        ERR_clear_error()
        let method = role == .client ? TLS_client_method() : TLS_server_method()
        guard let context = SSL_CTX_new(method) else {
            throw TLSError(.configuration, "SSL_CTX_new: \(TLSError.openSSLErrors())")
        }
        // Checked: without it a context would accept TLS 1.0/1.1 peers. (Before
        // `self` is complete, so the context is freed here, not by deinit.)
        do {
            try OpenSSLCall.check("SSL_CTX_set_min_proto_version") { cinterop_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) }
        } catch {
            SSL_CTX_free(context)
            throw error
        }
        self.context = context
        self.role = role
        // set_mode and set_options return the new bit mask, not a status.
        // Record buffers are released when idle: an idle connection (a
        // server may hold thousands) then costs no 34 KiB of them.
        _ = cinterop_SSL_CTX_set_mode(context, Int(SSL_MODE_RELEASE_BUFFERS))
        // RFC 7540 §9.2.2: no renegotiation, no compression for HTTP/2.
        // SSL_OP_NO_COMPRESSION (bit 17) | SSL_OP_NO_RENEGOTIATION (bit 30):
        // the SSL_OP_BIT macros do not import into Swift.
        _ = cinterop_SSL_CTX_set_options(context, (1 << 17) | (1 << 30))
    }

    func useCertificate(pem: String, keyPEM: String) throws {
        let chain = try X509Certificate.chain(fromPEM: pem)
        guard let leaf = chain.first else { throw TLSError(.configuration, "no certificate in PEM") }
        guard SSL_CTX_use_certificate(context, leaf.pointer) == 1 else {
            throw TLSError(.configuration, "cannot use certificate: \(TLSError.openSSLErrors())")
        }
        for extra in chain.dropFirst() {
            // SSL_CTX_add1_chain_cert is a macro over SSL_CTX_ctrl.
            try OpenSSLCall.check("SSL_CTX_add1_chain_cert") {
                SSL_CTX_ctrl(context, SSL_CTRL_CHAIN_CERT, 1, UnsafeMutableRawPointer(extra.pointer))
            }
        }
        let key = try PrivateKey(pem: keyPEM)
        guard SSL_CTX_use_PrivateKey(context, key.pointer) == 1,
              SSL_CTX_check_private_key(context) == 1 else {
            throw TLSError(.configuration, "certificate and key do not match: \(TLSError.openSSLErrors())")
        }
    }

    /// A new `SSL` for one connection.
    func makeSSL() throws -> OpaquePointer {
        guard let ssl = SSL_new(context) else {
            throw TLSError(.configuration, "SSL_new: \(TLSError.openSSLErrors())")
        }
        return ssl
    }

    deinit { SSL_CTX_free(context) }
}

/// Server ALPN: pick `h2` or fail the handshake (no_application_protocol).
private let selectH2: @convention(c) (
    OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
    UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?
) -> Int32 = { _, out, outLength, input, inputLength, _ in
    selectALPN("h2", out, outLength, input, inputLength) ? SSL_TLSEXT_ERR_OK : SSL_TLSEXT_ERR_ALERT_FATAL
}

/// Server ALPN for an HTTP/1.1 listener: `http/1.1` when offered, else no ALPN.
private let selectHTTP11: @convention(c) (
    OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
    UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?
) -> Int32 = { _, out, outLength, input, inputLength, _ in
    selectALPN("http/1.1", out, outLength, input, inputLength) ? SSL_TLSEXT_ERR_OK : SSL_TLSEXT_ERR_NOACK
}

/// Server ALPN for the gRPC port serving HTTP/1.1 too: `h2`, else
/// `http/1.1`, else fail the handshake (no_application_protocol).
private let selectH2OrHTTP11: @convention(c) (
    OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
    UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?
) -> Int32 = { _, out, outLength, input, inputLength, _ in
    selectALPN("h2", out, outLength, input, inputLength) || selectALPN("http/1.1", out, outLength, input, inputLength)
        ? SSL_TLSEXT_ERR_OK : SSL_TLSEXT_ERR_ALERT_FATAL
}

/// Points `out` at `wanted` in the client's ALPN list (length-prefixed
/// names); false when the client did not offer it.
private func selectALPN(
    _ wanted: StaticString, _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, _ outLength: UnsafeMutablePointer<UInt8>?,
    _ input: UnsafePointer<UInt8>?, _ inputLength: UInt32
) -> Bool {
    guard let input, let out, let outLength else { return false }
    let name = UnsafeBufferPointer(start: wanted.utf8Start, count: wanted.utf8CodeUnitCount)
    var index = 0
    let total = Int(inputLength)
    while index < total {
        let length = Int(input[index])
        if index + 1 + length > total { break }
        if length == name.count && (0..<length).allSatisfy({ input[index + 1 + $0] == name[$0] }) {
            out.pointee = input + index + 1
            outLength.pointee = UInt8(length)
            return true
        }
        index += 1 + length
    }
    return false
}
