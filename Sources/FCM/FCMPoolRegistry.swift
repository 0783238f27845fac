public import Logging
import ProviderHTTP2

/// Identifies one client: the service account (never shared across
/// accounts) and the endpoint.
public struct FCMPoolKey: Hashable, Sendable, CustomStringConvertible {
    /// `"<client_email>/<private_key_id>"`: stable and not secret.
    public var credentialID: String
    public var endpoint: FCMEndpoint

    public init(credentialID: String, endpoint: FCMEndpoint) {
        self.credentialID = credentialID
        self.endpoint = endpoint
    }

    /// The key of `account` at `endpoint`.
    public init(account: FCMServiceAccount, endpoint: FCMEndpoint) {
        self.init(credentialID: "\(account.clientEmail)/\(account.privateKeyID)", endpoint: endpoint)
    }

    public var description: String { "\(credentialID)@\(endpoint)" }
}

/// One ``FCMClient`` per (service account, endpoint), made on first use, so
/// one Herald instance serves several projects without their tokens or
/// connections mixing.
public final class FCMPoolRegistry: Sendable {
    private let clients = ProviderClientRegistry<FCMPoolKey, FCMClient>()
    private let logger: Logger

    public init(logger: Logger = Logger(label: "herald.fcm")) {
        self.logger = logger
    }

    /// The client for `key`, created with `configuration()` the first time.
    public func client(for key: FCMPoolKey, configuration: () throws -> FCMClientConfiguration) throws -> FCMClient {
        try clients.client(for: key) { try FCMClient(configuration: configuration(), logger: logger) }
    }

    /// Status of every client, for operators.
    public func statuses() async -> [(key: FCMPoolKey, status: FCMPoolStatus)] {
        await clients.statuses()
    }

    /// Shuts every client down and forgets them.
    public func shutdown() async {
        await clients.shutdown()
    }
}
