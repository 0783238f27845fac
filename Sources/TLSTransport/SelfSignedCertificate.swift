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
        let names = (["localhost"] + dnsNames).map { "DNS:\($0)" } + ["IP:127.0.0.1", "IP:::1"]
        let certificate = try DevelopmentCertificates.issue(
            commonName: commonName, organization: "Herald APNs simulator", key: key, issuer: nil, days: 365,
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE"),
                (NID_key_usage, "critical,digitalSignature,keyCertSign"),
                (NID_ext_key_usage, "serverAuth"),
                (NID_subject_key_identifier, "hash"),
                (NID_subject_alt_name, names.joined(separator: ",")),
            ])
        let pem = try certificate.pem()
        return SelfSignedCertificate(certificatePEM: pem, keyPEM: try key.privateKeyPEM())
    }
}
