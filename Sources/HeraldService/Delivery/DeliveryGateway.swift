import APNs
import HeraldCore

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
}

extension APNsGateway: DeliveryGateway {
    public func sender(bundleID: String, environment: APNsEnvironment?) -> (any APNsSending)? {
        client(bundleID: bundleID, environment: environment)
    }
}
