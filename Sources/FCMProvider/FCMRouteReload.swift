public import Logging
public import PushProviders

/// SIGHUP's re-read of the FCM routes: the FCM routes file plus the routes
/// given as flags or config-file lines (fixed at start).
public struct FCMRouteReload: RouteReloading {
    public let gateway: FCMGateway
    public let fixedRoutes: [FCMRouteSpec]
    public let routesFile: String?
    public let ratePerMinute: Int
    public let logger: Logger

    public init(gateway: FCMGateway, fixedRoutes: [FCMRouteSpec], routesFile: String?, ratePerMinute: Int, logger: Logger) {
        self.gateway = gateway
        self.fixedRoutes = fixedRoutes
        self.routesFile = routesFile
        self.ratePerMinute = ratePerMinute
        self.logger = logger
    }

    /// The new FCM routes; nil: leave them (no FCM routes file, or still
    /// none and the bundled FCM simulator serving).
    public func prepareReload() throws -> PreparedRouteReload? {
        guard let path = routesFile else { return nil }
        let specs = fixedRoutes + (try FCMRouteSpec.parseFile(path: path))
        if specs.isEmpty {
            guard gateway.simulator != nil else {
                throw RouteReloadError("FCM routes file \(path) has no routes")
            }
            return nil
        }
        if gateway.simulator != nil {
            throw RouteReloadError("FCM routes file \(path) now has routes; Herald started on the bundled FCM simulator: restart to use them")
        }
        let routes = try FCMRouteSpec.makeRoutes(specs, ratePerMinute: ratePerMinute, reusing: gateway.routes, logger: logger)
        let gateway = gateway
        return PreparedRouteReload {
            let before = gateway.routes
            let retired = gateway.replaceRoutes(routes)
            var metadata = PreparedRouteReload.changes(
                from: before.map { ($0.name, $0.identity) }, to: routes.map { ($0.name, $0.identity) }, prefix: "fcm_")
            metadata["fcm_pools_retired"] = "\(retired.count)"
            return .init(metadata: metadata, retirements: retired.map { client in { await gateway.retireWhenIdle(client) } })
        }
    }
}
