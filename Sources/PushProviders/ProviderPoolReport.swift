public import HeraldCore

/// One connection pool of a provider as Status and `/metrics` report it, in
/// neutral terms (``PushProvider/poolReports()``). Status maps each to its
/// platform's wire field (`apns_pools`, `fcm_pools`).
public struct ProviderPoolReport: Sendable, Equatable {
    /// The platform the pool delivers to.
    public var platform: Platform
    /// The service's short name (`apns`, `fcm`): the metrics' `service` label.
    public var service: String
    /// The route's name (or the endpoint, when unnamed).
    public var route: String
    /// Where the pool connects.
    public var endpoint: String
    /// The provider account the pool sends as (an FCM project), if any.
    public var account: String?
    public var connectionsOpen: Int
    public var streamsInFlight: Int
    /// The provider's last refusal or failure, else the connection's last error.
    public var lastError: String?
    /// When the provider's last refusal or failure came (Unix ms).
    public var lastErrorAt: Int64?
    /// Auth refusals by provider reason.
    public var authFailures: [String: Int]
    /// Credentials minted (provider or access tokens).
    public var credentialsMinted: Int
    /// Every bundle the routes sharing this pool serve (`*`: all): Status
    /// shows a bundle-scoped token only the pools that serve its bundles.
    public var bundleIDs: Set<String>

    public init(
        platform: Platform, service: String, route: String, endpoint: String, account: String? = nil, connectionsOpen: Int,
        streamsInFlight: Int, lastError: String?, lastErrorAt: Int64?, authFailures: [String: Int], credentialsMinted: Int,
        bundleIDs: Set<String>
    ) {
        self.platform = platform
        self.service = service
        self.route = route
        self.endpoint = endpoint
        self.account = account
        self.connectionsOpen = connectionsOpen
        self.streamsInFlight = streamsInFlight
        self.lastError = lastError
        self.lastErrorAt = lastErrorAt
        self.authFailures = authFailures
        self.credentialsMinted = credentialsMinted
        self.bundleIDs = bundleIDs
    }
}
