public import APNsProvider
public import FCM
public import FCMProvider

// The gateways as the provider adapters' routing: each hands out the client
// for a bundle and times every send through it, keeping its books.

extension APNsGateway: APNsRouting {}

extension FCMGateway: FCMRouting {
    public func client(bundleID: String) -> (client: FCMClient, projectID: String)? {
        route(bundleID: bundleID).map { ($0.client, $0.projectID) }
    }
}
