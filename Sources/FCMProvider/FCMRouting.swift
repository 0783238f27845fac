public import FCM
public import PushProviders

/// One FCM client as the provider sees it: sends one request and answers
/// (or throws ``FCMError``). A class: messages are admitted per client
/// (route), by identity.
public protocol FCMSending: AnyObject, Sendable {
    func send(_ request: FCMRequest) async throws -> FCMResponse
}

extension FCMClient: FCMSending {}

/// Where Android pushes go: the client for a bundle (an Android package
/// name) and the Firebase project to send to. The service's FCM gateway in
/// production (which times each send and keeps its books); an in-memory
/// fake in tests.
public protocol FCMRouting: Sendable {
    associatedtype FCMSender: FCMSending

    /// The client and Firebase project for `bundleID`; nil when no FCM route serves it.
    func client(bundleID: String) -> (client: FCMSender, projectID: String)?
    /// Sends through `client` (the routing may time it and keep its books).
    func send(_ request: FCMRequest, with client: FCMSender) async throws -> FCMResponse

    /// Whether a route (or the bundled simulator) serves `bundleID`.
    func serves(bundleID: String) -> Bool

    /// Shuts the routes' clients (and any bundled simulator) down.
    func shutdown() async

    /// The routes' connection pools now.
    func poolReports() async -> [ProviderPoolReport]
}

extension FCMRouting {
    public func send(_ request: FCMRequest, with client: FCMSender) async throws -> FCMResponse {
        try await client.send(request)
    }
}
