/// TLS for the client: whom to trust, and the client certificate for mTLS.
public struct ClientTLS: Sendable, Equatable {
    /// PEM file of the CAs to trust; nil: the system's store.
    public var caFile: String?
    /// PEM client certificate and key (the server's `--tls-client-ca`).
    public var clientCertificateFile: String?
    /// The PEM private key of ``clientCertificateFile`` (both or neither).
    public var clientKeyFile: String?
    /// The name the server's certificate must match (default: the host).
    public var serverName: String?

    /// TLS settings; every file is read when connecting.
    public init(caFile: String? = nil, clientCertificateFile: String? = nil, clientKeyFile: String? = nil, serverName: String? = nil) {
        self.caFile = caFile
        self.clientCertificateFile = clientCertificateFile
        self.clientKeyFile = clientKeyFile
        self.serverName = serverName
    }
}
