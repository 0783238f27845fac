import CInterop

/// A throwaway PKI for development and tests (`herald tls-selfsigned`): a CA,
/// a server certificate it signed, and a client certificate it signed (mTLS).
/// Every key is ECDSA P-256; every certificate is SHA-256-signed.
public struct DevelopmentCertificates: Sendable {
    /// The CA certificate: what clients trust (`--cacert`, `root_certificates`)
    /// and what `--tls-client-ca` names.
    public let caCertificatePEM: String
    /// The server's certificate (leaf only; the CA is the whole chain).
    public let serverCertificatePEM: String
    public let serverKeyPEM: String
    /// A client certificate for mTLS.
    public let clientCertificatePEM: String
    public let clientKeyPEM: String

    /// - Parameters:
    ///   - hosts: names the server certificate is valid for besides
    ///     `localhost`, `127.0.0.1` and `::1` (DNS names or IP literals).
    ///   - days: validity.
    public static func generate(hosts: [String] = [], days: Int = 365, clientName: String = "herald-dev-client") throws -> DevelopmentCertificates {
        let caKey = try PrivateKey.generateP256()
        let ca = try issue(
            commonName: "Herald development CA", key: caKey, issuer: nil, days: days,
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE,pathlen:0"),
                (NID_key_usage, "critical,keyCertSign,cRLSign"),
                (NID_subject_key_identifier, "hash"),
                (NID_authority_key_identifier, "keyid:always"),
            ])
        var sans = ["DNS:localhost", "IP:127.0.0.1", "IP:::1"]
        for host in hosts {
            let entry = isIPAddress(host) ? "IP:\(host)" : "DNS:\(host)"
            if !sans.contains(entry) { sans.append(entry) }
        }
        let serverKey = try PrivateKey.generateP256()
        let server = try issue(
            commonName: hosts.first ?? "localhost", key: serverKey, issuer: (ca, caKey), days: days,
            extensions: [
                (NID_basic_constraints, "critical,CA:FALSE"),
                (NID_key_usage, "critical,digitalSignature"),
                (NID_ext_key_usage, "serverAuth"),
                (NID_subject_key_identifier, "hash"),
                (NID_authority_key_identifier, "keyid:always"),
                (NID_subject_alt_name, sans.joined(separator: ",")),
            ])
        let clientKey = try PrivateKey.generateP256()
        let client = try issue(
            commonName: clientName, key: clientKey, issuer: (ca, caKey), days: days,
            extensions: [
                (NID_basic_constraints, "critical,CA:FALSE"),
                (NID_key_usage, "critical,digitalSignature"),
                (NID_ext_key_usage, "clientAuth"),
                (NID_subject_key_identifier, "hash"),
                (NID_authority_key_identifier, "keyid:always"),
            ])
        return DevelopmentCertificates(
            caCertificatePEM: try ca.pem(),
            serverCertificatePEM: try server.pem(), serverKeyPEM: try serverKey.privateKeyPEM(),
            clientCertificatePEM: try client.pem(), clientKeyPEM: try clientKey.privateKeyPEM())
    }

    /// One certificate for `key`, signed by `issuer` (self-signed when nil).
    static func issue(
        commonName: String, organization: String = "Herald development", key: PrivateKey,
        issuer: (certificate: X509Certificate, key: PrivateKey)?, days: Int, extensions: [(Int32, String)]
    ) throws -> X509Certificate {
        let certificate = try OpenSSLCall.nonNil("X509_new") { X509_new() }
        let owned = X509Certificate(taking: certificate)  // frees it on every path
        try OpenSSLCall.check("X509_set_version") { X509_set_version(certificate, 2) }
        var serial = [UInt8](repeating: 0, count: 16)
        try OpenSSLCall.check("RAND_bytes") { RAND_bytes(&serial, 16) }
        serial[0] &= 0x7f
        serial[0] |= 0x01  // positive and 16 bytes long
        let serialNumber = try OpenSSLCall.nonNil("BN_bin2bn") { BN_bin2bn(serial, 16, nil) }
        defer { BN_free(serialNumber) }
        _ = try OpenSSLCall.nonNil("BN_to_ASN1_INTEGER") { BN_to_ASN1_INTEGER(serialNumber, X509_get_serialNumber(certificate)) }
        _ = try OpenSSLCall.nonNil("X509_gmtime_adj") { X509_gmtime_adj(X509_getm_notBefore(certificate), -3600) }
        _ = try OpenSSLCall.nonNil("X509_gmtime_adj") { X509_gmtime_adj(X509_getm_notAfter(certificate), days * 86_400) }
        try OpenSSLCall.check("X509_set_pubkey") { X509_set_pubkey(certificate, key.pointer) }
        let name = try OpenSSLCall.nonNil("X509_get_subject_name") { X509_get_subject_name(certificate) }
        try OpenSSLCall.check("X509_NAME_add_entry_by_txt") {
            X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, organization, -1, -1, 0)
        }
        try OpenSSLCall.check("X509_NAME_add_entry_by_txt") {
            X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, commonName, -1, -1, 0)
        }
        let issuerCertificate = issuer?.certificate.pointer ?? certificate
        let issuerName = try OpenSSLCall.nonNil("X509_get_subject_name") { X509_get_subject_name(issuerCertificate) }
        try OpenSSLCall.check("X509_set_issuer_name") { X509_set_issuer_name(certificate, issuerName) }
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuerCertificate, certificate, nil, nil, 0)
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                throw TLSError(.configuration, "extension \(value): \(TLSError.openSSLErrors())")
            }
            defer { X509_EXTENSION_free(ext) }
            try OpenSSLCall.check("X509_add_ext") { X509_add_ext(certificate, ext, -1) }
        }
        let signer = issuer?.key ?? key
        guard X509_sign(certificate, signer.pointer, EVP_sha256()) > 0 else {
            throw TLSError(.configuration, "X509_sign: \(TLSError.openSSLErrors())")
        }
        return owned
    }
}
