public import APNs
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
}

extension DeliveryGateway {
    public func send(_ request: APNsRequest, with sender: any APNsSending) async throws -> APNsResponse {
        try await sender.send(request)
    }

    public func dispatchLateness(milliseconds: Int64) {}
}

extension APNsGateway: DeliveryGateway {
    public func sender(bundleID: String, environment: APNsEnvironment?) -> (any APNsSending)? {
        client(bundleID: bundleID, environment: environment)
    }

    public func send(_ request: APNsRequest, with sender: any APNsSending) async throws -> APNsResponse {
        guard let client = sender as? APNsClient else { return try await sender.send(request) }
        return try await send(request, with: client)
    }
}
