public import Logging

/// An FCM HTTP v1 client for one service account: OAuth access tokens, a
/// pool of HTTP/2 + TLS connections, error mapping, retries and a
/// per-project rate bucket. Send from any task; thread-safe.
public final class FCMClient: Sendable {
    public let configuration: FCMClientConfiguration
    private let logger: Logger

    public init(configuration: FCMClientConfiguration, logger: Logger) throws {
        try configuration.serviceAccount.validate()
        self.configuration = configuration
        self.logger = logger
    }

    /// Sends one message and returns FCM's answer.
    public func send(_ request: FCMRequest) async throws -> FCMResponse {
        throw FCMError.connectionFailed("not implemented yet")
    }

    /// Endpoint, connections, streams in flight, last error, tokens minted.
    public func status() async -> FCMPoolStatus {
        FCMPoolStatus(endpoint: configuration.endpoint)
    }

    /// Closes every connection; queued and later sends fail with ``FCMError/shutdown``.
    public func shutdown() async {}
}
