import CInterop

/// Runs `body` with a read-only memory BIO over `text`.
func withMemoryBIO<T>(_ text: String, _ body: (OpaquePointer) throws -> T) throws -> T {
    var bytes = Array(text.utf8)
    return try bytes.withUnsafeMutableBytes { raw in
        guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else {
            throw TLSError(.configuration, "BIO_new_mem_buf failed")
        }
        defer { BIO_free(bio) }
        return try body(bio)
    }
}

/// Collects what `write` puts into a fresh memory BIO as a string.
func stringFromMemoryBIO(_ write: (OpaquePointer) -> Int32) throws -> String {
    guard let bio = BIO_new(BIO_s_mem()) else { throw TLSError(.configuration, "BIO_new failed") }
    defer { BIO_free(bio) }
    guard write(bio) == 1 else { throw TLSError(.configuration, "PEM write: \(TLSError.openSSLErrors())") }
    let length = cinterop_BIO_pending(bio)
    var buffer = [UInt8](repeating: 0, count: Int(length))
    let read = BIO_read(bio, &buffer, length)
    return String(decoding: buffer.prefix(Int(max(read, 0))), as: UTF8.self)
}

/// An owned `X509*`.
public final class X509Certificate: @unchecked Sendable {
    let pointer: OpaquePointer

    init(taking pointer: OpaquePointer) { self.pointer = pointer }

    /// Every certificate in a PEM bundle, in order.
    public static func chain(fromPEM pem: String) throws -> [X509Certificate] {
        try withMemoryBIO(pem) { bio in
            var result: [X509Certificate] = []
            while result.count < 32, let certificate = PEM_read_bio_X509(bio, nil, nil, nil) {
                result.append(X509Certificate(taking: certificate))
            }
            ERR_clear_error()  // the loop ends on a "no start line" error
            return result
        }
    }

    /// PEM text of this certificate.
    public func pem() throws -> String {
        try stringFromMemoryBIO { PEM_write_bio_X509($0, pointer) }
    }

    deinit { X509_free(pointer) }
}

/// An owned `EVP_PKEY*` (private or public).
public final class PrivateKey: @unchecked Sendable {
    let pointer: OpaquePointer

    init(taking pointer: OpaquePointer) { self.pointer = pointer }

    /// Reads a PEM private key (PKCS#8 `BEGIN PRIVATE KEY`, as in an APNs .p8, or SEC1).
    public convenience init(pem: String) throws {
        let key = try withMemoryBIO(pem) { PEM_read_bio_PrivateKey($0, nil, nil, nil) }
        guard let key else { throw TLSError(.configuration, "not a PEM private key: \(TLSError.openSSLErrors())") }
        self.init(taking: key)
    }

    /// Reads a PEM public key (`BEGIN PUBLIC KEY`).
    public static func publicKey(pem: String) throws -> PrivateKey {
        let key = try withMemoryBIO(pem) { PEM_read_bio_PUBKEY($0, nil, nil, nil) }
        guard let key else { throw TLSError(.configuration, "not a PEM public key: \(TLSError.openSSLErrors())") }
        return PrivateKey(taking: key)
    }

    /// A fresh EC P-256 key.
    public static func generateP256() throws -> PrivateKey {
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nil) else {
            throw TLSError(.configuration, "EVP_PKEY_CTX_new_id failed")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1,
              EVP_PKEY_CTX_set_ec_paramgen_curve_nid(context, NID_X9_62_prime256v1) == 1,
              EVP_PKEY_keygen(context, &key) == 1, let key else {
            throw TLSError(.configuration, "EC key generation failed: \(TLSError.openSSLErrors())")
        }
        return PrivateKey(taking: key)
    }

    /// True for an EC key on P-256 (what ES256 needs).
    public var isP256: Bool {
        EVP_PKEY_get_base_id(pointer) == EVP_PKEY_EC && EVP_PKEY_get_bits(pointer) == 256
    }

    /// PKCS#8 PEM of the private key.
    public func privateKeyPEM() throws -> String {
        try stringFromMemoryBIO { PEM_write_bio_PrivateKey($0, pointer, nil, nil, 0, nil, nil) }
    }

    /// SubjectPublicKeyInfo PEM of the public half.
    public func publicKeyPEM() throws -> String {
        try stringFromMemoryBIO { PEM_write_bio_PUBKEY($0, pointer) }
    }

    deinit { EVP_PKEY_free(pointer) }
}
