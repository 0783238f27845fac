public import APNs
public import FCM
public import HeraldCore

/// One APNs client as the dispatcher sees it: sends one request and answers
/// (or throws ``APNsError``). A class: the dispatcher admits messages per
/// client (route), by identity.
public protocol APNsSending: AnyObject, Sendable {
    func send(_ request: APNsRequest) async throws -> APNsResponse
}

extension APNsClient: APNsSending {}

/// Where the dispatcher's pushes go: the client for a bundle and a device's
/// environment. `APNsGateway` in production; an in-memory fake in tests.
public protocol DeliveryGateway: Sendable {
    /// The client for a bundle and environment; nil when none is configured.
    func sender(bundleID: String, environment: APNsEnvironment?) -> (any APNsSending)?
    /// Sends through `sender` (the gateway may time it and keep its books).
    func send(_ request: APNsRequest, with sender: any APNsSending) async throws -> APNsResponse
    /// How late a due message was claimed (send time minus due time).
    func dispatchLateness(milliseconds: Int64)
    /// The FCM client for an Android package and the Firebase project to
    /// send to; nil when no FCM route serves the bundle.
    func fcmSender(bundleID: String) -> (sender: any FCMSending, projectID: String)?
    /// Sends through `sender` (the gateway may time it and keep its books).
    func send(_ request: FCMRequest, with sender: any FCMSending) async throws -> FCMResponse
}

extension DeliveryGateway {
    public func send(_ request: APNsRequest, with sender: any APNsSending) async throws -> APNsResponse {
        try await sender.send(request)
    }

    public func dispatchLateness(milliseconds: Int64) {}

    public func fcmSender(bundleID: String) -> (sender: any FCMSending, projectID: String)? { nil }

    public func send(_ request: FCMRequest, with sender: any FCMSending) async throws -> FCMResponse {
        try await sender.send(request)
    }
}

extension APNsGateway: DeliveryGateway {
    public func sender(bundleID: String, environment: APNsEnvironment?) -> (any APNsSending)? {
        client(bundleID: bundleID, environment: environment)
    }

    public func send(_ request: APNsRequest, with sender: any APNsSending) async throws -> APNsResponse {
        guard let client = sender as? APNsClient else { return try await sender.send(request) }
        return try await send(request, with: client)
    }

    public func fcmSender(bundleID: String) -> (sender: any FCMSending, projectID: String)? {
        fcm.route(bundleID: bundleID).map { ($0.client, $0.projectID) }
    }

    public func send(_ request: FCMRequest, with sender: any FCMSending) async throws -> FCMResponse {
        guard let client = sender as? FCMClient else { return try await sender.send(request) }
        return try await fcm.send(request, with: client)
    }
}
