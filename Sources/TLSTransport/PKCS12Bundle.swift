import CInterop

/// A PKCS#12 (.p12) client identity, as Apple's Keychain exports APNs certificates.
public enum PKCS12Bundle {
    /// The certificate chain (leaf first) and private key as PEM.
    public static func pem(fromDER der: [UInt8], password: String) throws -> (certificatePEM: String, keyPEM: String) {
        let bundle: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PKCS12(nil, &cursor, buffer.count)
        }
        guard let bundle else { throw TLSError(.configuration, "not a PKCS#12 file: \(TLSError.openSSLErrors())") }
        defer { PKCS12_free(bundle) }
        var key: OpaquePointer?
        var certificate: OpaquePointer?
        var chain: OpaquePointer?
        guard PKCS12_parse(bundle, password, &key, &certificate, &chain) == 1, let key, let certificate else {
            throw TLSError(.configuration, "cannot open PKCS#12 (wrong password?): \(TLSError.openSSLErrors())")
        }
        let privateKey = PrivateKey(taking: key)
        var pem = try X509Certificate(taking: certificate).pem()
        if let chain {
            let count = OPENSSL_sk_num(chain)
            for index in 0..<count {
                if let extra = OPENSSL_sk_value(chain, index) {
                    pem += try stringFromMemoryBIO { PEM_write_bio_X509($0, OpaquePointer(extra)) }
                }
            }
            OPENSSL_sk_pop_free(chain) { X509_free(OpaquePointer($0)) }
        }
        return (pem, try privateKey.privateKeyPEM())
    }
}
