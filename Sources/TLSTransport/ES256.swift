import CInterop

/// ECDSA P-256 with SHA-256 in JOSE form (raw 64-byte `r || s`, RFC 7518 §3.4).
public enum ES256 {
    /// Signs `message`; returns the 64-byte JOSE signature.
    public static func sign(_ message: [UInt8], with key: PrivateKey) throws -> [UInt8] {
        guard key.isP256 else { throw TLSError(.configuration, "ES256 needs an EC P-256 key") }
        guard let context = EVP_MD_CTX_new() else { throw TLSError(.configuration, "EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key.pointer) == 1 else {
            throw TLSError(.configuration, "EVP_DigestSignInit: \(TLSError.openSSLErrors())")
        }
        var der = [UInt8](repeating: 0, count: 80)
        var length = der.count
        guard EVP_DigestSign(context, &der, &length, message, message.count) == 1 else {
            throw TLSError(.configuration, "EVP_DigestSign: \(TLSError.openSSLErrors())")
        }
        return try rawSignature(fromDER: Array(der.prefix(length)))
    }

    /// Verifies a 64-byte JOSE signature over `message`.
    public static func verify(_ signature: [UInt8], over message: [UInt8], with key: PrivateKey) -> Bool {
        guard signature.count == 64, let der = derSignature(fromRaw: signature),
              let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key.pointer) == 1 else {
            ERR_clear_error()
            return false
        }
        let ok = EVP_DigestVerify(context, der, der.count, message, message.count) == 1
        ERR_clear_error()
        return ok
    }

    static func rawSignature(fromDER der: [UInt8]) throws -> [UInt8] {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let parsed else { throw TLSError(.configuration, "bad DER ECDSA signature") }
        defer { ECDSA_SIG_free(parsed) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(parsed, &r, &s)
        var raw = [UInt8](repeating: 0, count: 64)
        guard BN_bn2binpad(r, &raw, 32) == 32 else { throw TLSError(.configuration, "bad r") }
        let ok = raw.withUnsafeMutableBufferPointer { BN_bn2binpad(s, $0.baseAddress! + 32, 32) == 32 }
        guard ok else { throw TLSError(.configuration, "bad s") }
        return raw
    }

    static func derSignature(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        return written == length ? der : nil
    }
}
