import ProviderHTTP2

/// Identifies one pool: credentials (never shared across teams) and endpoint.
public struct APNsPoolKey: Hashable, Sendable, CustomStringConvertible {
    /// A stable, non-secret name for the credentials, e.g. `"token:TEAMID/KEYID"`
    /// or `"certificate:<sha256 of the certificate>"`.
    public var credentialID: String
    public var endpoint: APNsEndpoint

    public init(credentialID: String, endpoint: APNsEndpoint) {
        self.credentialID = credentialID
        self.endpoint = endpoint
    }

    /// The key for token auth.
    public static func token(teamID: String, keyID: String, endpoint: APNsEndpoint) -> APNsPoolKey {
        APNsPoolKey(credentialID: "token:\(teamID)/\(keyID)", endpoint: endpoint)
    }

    public var description: String { "\(credentialID)@\(endpoint)" }
}

/// One ``APNsClient`` per (credentials, endpoint), made on first use, so one
/// Herald instance serves many apps, teams and environments without keys of
/// different teams sharing a connection.
public final class APNsPoolRegistry: Sendable {
    private let clients = ProviderClientRegistry<APNsPoolKey, APNsClient>()

    public init() {}

    /// The pool for `key`, created with `configuration()` the first time.
    public func client(
        for key: APNsPoolKey, configuration: () throws -> APNsClientConfiguration
    ) throws -> APNsClient {
        try clients.client(for: key) { try APNsClient(configuration: configuration()) }
    }

    /// Status of every pool, for operators.
    public func statuses() async -> [(key: APNsPoolKey, status: APNsPoolStatus)] {
        await clients.statuses()
    }

    /// Shuts every pool down and forgets them.
    public func shutdown() async {
        await clients.shutdown()
    }
}
