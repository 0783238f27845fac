public import APNs
public import PushProviders
public import HeraldCore

/// One APNs client as the provider sees it: sends one request and answers
/// (or throws ``APNsError``). A class: messages are admitted per client
/// (route), by identity.
public protocol APNsSending: AnyObject, Sendable {
    func send(_ request: APNsRequest) async throws -> APNsResponse
}

extension APNsClient: APNsSending {}

/// Where iOS pushes go: the client for a bundle and a device's
/// environment. The service's APNs gateway in production (which times each
/// send and keeps its books); an in-memory fake in tests.
public protocol APNsRouting: Sendable {
    associatedtype APNsSender: APNsSending

    /// The client for a bundle and environment; nil when none is configured.
    func client(bundleID: String, environment: APNsEnvironment?) -> APNsSender?
    /// Sends through `client` (the routing may time it and keep its books).
    func send(_ request: APNsRequest, with client: APNsSender) async throws -> APNsResponse

    /// The device environments some route serves for `bundleID`; empty when
    /// no route could ever deliver to it.
    func environments(serving bundleID: String) -> Set<APNsEnvironment>

    /// Shuts the routes' clients (and any bundled simulator) down.
    func shutdown() async

    /// The routes' connection pools now.
    func poolReports() async -> [ProviderPoolReport]
}

extension APNsRouting {
    public func send(_ request: APNsRequest, with client: APNsSender) async throws -> APNsResponse {
        try await client.send(request)
    }
}
