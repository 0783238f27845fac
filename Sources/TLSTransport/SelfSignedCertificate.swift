import CInterop

/// A self-signed certificate that is its own CA (for the APNs simulator).
public struct SelfSignedCertificate: Sendable {
    /// PEM of the certificate; also the CA a client must trust.
    public let certificatePEM: String
    /// PKCS#8 PEM of its EC P-256 key.
    public let keyPEM: String

    /// Generates a P-256 certificate for `commonName` valid for `localhost`,
    /// `127.0.0.1`, `::1` and any extra DNS names, one year long.
    public static func generate(commonName: String = "localhost", dnsNames: [String] = []) throws -> SelfSignedCertificate {
        let key = try PrivateKey.generateP256()
        guard let certificate = X509_new() else { throw TLSError(.configuration, "X509_new failed") }
        defer { X509_free(certificate) }
        try OpenSSLCall.check("X509_set_version") { X509_set_version(certificate, 2) }
        var serial = [UInt8](repeating: 0, count: 16)
        // A serial from a failed RAND_bytes would be zeros: every simulator
        // certificate would share it.
        try OpenSSLCall.check("RAND_bytes") { RAND_bytes(&serial, 16) }
        serial[0] &= 0x7f
        let serialNumber = try OpenSSLCall.nonNil("BN_bin2bn") { BN_bin2bn(serial, 16, nil) }
        defer { BN_free(serialNumber) }
        _ = try OpenSSLCall.nonNil("BN_to_ASN1_INTEGER") { BN_to_ASN1_INTEGER(serialNumber, X509_get_serialNumber(certificate)) }
        _ = try OpenSSLCall.nonNil("X509_gmtime_adj") { X509_gmtime_adj(X509_getm_notBefore(certificate), -3600) }
        _ = try OpenSSLCall.nonNil("X509_gmtime_adj") { X509_gmtime_adj(X509_getm_notAfter(certificate), 365 * 86_400) }
        try OpenSSLCall.check("X509_set_pubkey") { X509_set_pubkey(certificate, key.pointer) }
        let name = X509_get_subject_name(certificate)
        try OpenSSLCall.check("X509_NAME_add_entry_by_txt") {
            X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, commonName, -1, -1, 0)
        }
        try OpenSSLCall.check("X509_NAME_add_entry_by_txt") {
            X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, "Herald APNs simulator", -1, -1, 0)
        }
        try OpenSSLCall.check("X509_set_issuer_name") { X509_set_issuer_name(certificate, name) }

        var context = X509V3_CTX()
        X509V3_set_ctx(&context, certificate, certificate, nil, nil, 0)
        let names = (["localhost"] + dnsNames).map { "DNS:\($0)" } + ["IP:127.0.0.1", "IP:::1"]
        let extensions: [(Int32, String)] = [
            (NID_basic_constraints, "critical,CA:TRUE"),
            (NID_key_usage, "critical,digitalSignature,keyCertSign"),
            (NID_ext_key_usage, "serverAuth"),
            (NID_subject_key_identifier, "hash"),
            (NID_subject_alt_name, names.joined(separator: ",")),
        ]
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                throw TLSError(.configuration, "extension \(value): \(TLSError.openSSLErrors())")
            }
            defer { X509_EXTENSION_free(ext) }
            try OpenSSLCall.check("X509_add_ext") { X509_add_ext(certificate, ext, -1) }
        }
        guard X509_sign(certificate, key.pointer, EVP_sha256()) > 0 else {
            throw TLSError(.configuration, "X509_sign: \(TLSError.openSSLErrors())")
        }
        let pem = try stringFromMemoryBIO { PEM_write_bio_X509($0, certificate) }
        return SelfSignedCertificate(certificatePEM: pem, keyPEM: try key.privateKeyPEM())
    }
}
