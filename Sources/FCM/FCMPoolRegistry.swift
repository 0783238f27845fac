public import Logging
import Synchronization

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
    private let clients = Mutex<[FCMPoolKey: FCMClient]>([:])
    private let logger: Logger

    public init(logger: Logger = Logger(label: "herald.fcm")) {
        self.logger = logger
    }

    /// The client for `key`, created with `configuration()` the first time.
    public func client(for key: FCMPoolKey, configuration: () throws -> FCMClientConfiguration) throws -> FCMClient {
        try clients.withLock { clients in
            if let existing = clients[key] { return existing }
            let client = try FCMClient(configuration: configuration(), logger: logger)
            clients[key] = client
            return client
        }
    }

    /// Status of every client, for operators.
    public func statuses() async -> [(key: FCMPoolKey, status: FCMPoolStatus)] {
        let all = clients.withLock { Array($0) }
        var result: [(key: FCMPoolKey, status: FCMPoolStatus)] = []
        for (key, client) in all.sorted(by: { $0.key.description < $1.key.description }) {
            result.append((key, await client.status()))
        }
        return result
    }

    /// Shuts every client down and forgets them.
    public func shutdown() async {
        let all = clients.withLock { clients in
            defer { clients.removeAll() }
            return Array(clients.values)
        }
        for client in all { await client.shutdown() }
    }
}
