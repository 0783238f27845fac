import CInterop

/// An RSA private key for RS256 (RSASSA-PKCS1-v1_5 with SHA-256, RFC 7518
/// §3.3), as in a Google service-account key. At least 2048 bits.
public struct RSAPrivateKey: Sendable {
    let key: PrivateKey

    /// The smallest modulus accepted (Google issues 2048-bit keys).
    public static let minimumBits = 2048

    private init(checked key: PrivateKey, what: String) throws {
        guard EVP_PKEY_get_base_id(key.pointer) == EVP_PKEY_RSA else {
            throw TLSError(.configuration, "\(what) is not an RSA key")
        }
        let bits = Int(EVP_PKEY_get_bits(key.pointer))
        guard bits >= Self.minimumBits else {
            throw TLSError(.configuration, "\(what) has \(bits) bits; RS256 needs at least \(Self.minimumBits)")
        }
        self.key = key
    }

    /// A fresh key of `bits` bits (tests, the simulator).
    public static func generate(bits: Int = 2048) throws -> RSAPrivateKey {
        guard bits >= minimumBits, bits <= 16_384 else {
            throw TLSError(.configuration, "RSA key size \(bits) outside \(minimumBits)...16384")
        }
        let context = try OpenSSLCall.nonNil("EVP_PKEY_CTX_new_id") { EVP_PKEY_CTX_new_id(EVP_PKEY_RSA, nil) }
        defer { EVP_PKEY_CTX_free(context) }
        try OpenSSLCall.check("EVP_PKEY_keygen_init") { EVP_PKEY_keygen_init(context) }
        try OpenSSLCall.check("EVP_PKEY_CTX_set_rsa_keygen_bits") { EVP_PKEY_CTX_set_rsa_keygen_bits(context, Int32(bits)) }
        var generated: OpaquePointer?
        try OpenSSLCall.check("EVP_PKEY_keygen") { EVP_PKEY_keygen(context, &generated) }
        guard let generated else { throw TLSError(.configuration, "EVP_PKEY_keygen returned no key") }
        return try RSAPrivateKey(checked: PrivateKey(taking: generated), what: "the generated key")
    }

    /// Reads a PEM RSA private key: PKCS#8 (`BEGIN PRIVATE KEY`, as in a
    /// service-account JSON) or PKCS#1 (`BEGIN RSA PRIVATE KEY`). Encrypted
    /// keys are refused (no passphrase prompt).
    public init(pem: String) throws {
        guard pem.utf8.count <= 65_536 else { throw TLSError(.configuration, "RSA private key PEM is too large") }
        guard !pem.utf8.contains(0) else { throw TLSError(.configuration, "RSA private key PEM contains a NUL byte") }
        guard pem.contains("-----BEGIN PRIVATE KEY-----") || pem.contains("-----BEGIN RSA PRIVATE KEY-----") else {
            throw TLSError(.configuration, "not a PEM RSA private key (no BEGIN PRIVATE KEY or BEGIN RSA PRIVATE KEY line)")
        }
        let parsed: OpaquePointer?
        do {
            parsed = try OpenSSLCall.nonNil("PEM_read_bio_PrivateKey") {
                try? withMemoryBIO(pem) { PEM_read_bio_PrivateKey($0, nil, rejectPassphrase, nil) }
            }
        } catch {
            throw TLSError(.configuration, "not a readable PEM RSA private key: \(error.message)")
        }
        guard let parsed else { throw TLSError(.configuration, "not a readable PEM RSA private key") }
        try self.init(checked: PrivateKey(taking: parsed), what: "the private key")
    }

    /// PKCS#8 PEM (`BEGIN PRIVATE KEY`) of this key.
    public var pkcs8PEM: String {
        // Writing a valid in-memory key to a memory BIO fails only when out of memory.
        (try? key.privateKeyPEM()) ?? ""
    }

    /// SubjectPublicKeyInfo PEM (`BEGIN PUBLIC KEY`) of the public half.
    public var publicKeyPEM: String {
        (try? key.publicKeyPEM()) ?? ""
    }

    /// The public half.
    public var publicKey: RSAPublicKey {
        get throws { try RSAPublicKey(pem: publicKeyPEM) }
    }

    /// Signs `data` with RSASSA-PKCS1-v1_5 / SHA-256; the signature is as long as the modulus.
    public func signRS256(_ data: [UInt8]) throws -> [UInt8] {
        let context = try OpenSSLCall.nonNil("EVP_MD_CTX_new") { EVP_MD_CTX_new() }
        defer { EVP_MD_CTX_free(context) }
        try OpenSSLCall.check("EVP_DigestSignInit") { EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key.pointer) }
        let size = Int(EVP_PKEY_get_size(key.pointer))
        guard size > 0 else { throw TLSError(.configuration, "EVP_PKEY_get_size gave \(size)") }
        var signature = [UInt8](repeating: 0, count: size)
        var length = size
        try OpenSSLCall.check("EVP_DigestSign") { EVP_DigestSign(context, &signature, &length, data, data.count) }
        guard length == size else { throw TLSError(.configuration, "RS256 signature of \(length) bytes, expected \(size)") }
        return signature
    }
}

/// The public half of an RSA key, for checking RS256 signatures.
public struct RSAPublicKey: Sendable {
    let key: PrivateKey

    /// Reads a SubjectPublicKeyInfo PEM (`BEGIN PUBLIC KEY`).
    public init(pem: String) throws {
        guard pem.utf8.count <= 65_536 else { throw TLSError(.configuration, "RSA public key PEM is too large") }
        guard !pem.utf8.contains(0) else { throw TLSError(.configuration, "RSA public key PEM contains a NUL byte") }
        let parsed: OpaquePointer?
        do {
            parsed = try OpenSSLCall.nonNil("PEM_read_bio_PUBKEY") {
                try? withMemoryBIO(pem) { PEM_read_bio_PUBKEY($0, nil, nil, nil) }
            }
        } catch {
            throw TLSError(.configuration, "not a PEM public key: \(error.message)")
        }
        guard let parsed else { throw TLSError(.configuration, "not a PEM public key") }
        let key = PrivateKey(taking: parsed)
        guard EVP_PKEY_get_base_id(key.pointer) == EVP_PKEY_RSA else {
            throw TLSError(.configuration, "the public key is not an RSA key")
        }
        self.key = key
    }

    /// True when `signature` is a valid RS256 signature of `data` by the private half.
    public func verifyRS256(signature: [UInt8], data: [UInt8]) -> Bool {
        guard signature.count == Int(EVP_PKEY_get_size(key.pointer)), let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        defer { ERR_clear_error() }  // a bad signature leaves reasons on the queue
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key.pointer) == 1 else { return false }
        return EVP_DigestVerify(context, signature, signature.count, data, data.count) == 1
    }
}

/// A passphrase callback that refuses: an encrypted key fails to load instead of prompting on the terminal.
private let rejectPassphrase: @convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?) -> Int32 = { _, _, _, _ in
    -1
}
