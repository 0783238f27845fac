public import PushProviders

/// SIGHUP's re-read of the APNs routes: the routes file plus the routes
/// given as flags or config-file lines (fixed at start).
public struct APNsRouteReload: RouteReloading {
    public let gateway: APNsGateway
    public let fixedRoutes: [APNsRouteSpec]
    public let routesFile: String?
    public let responseTimeout: Duration

    public init(gateway: APNsGateway, fixedRoutes: [APNsRouteSpec], routesFile: String?, responseTimeout: Duration) {
        self.gateway = gateway
        self.fixedRoutes = fixedRoutes
        self.routesFile = routesFile
        self.responseTimeout = responseTimeout
    }

    /// The new routes; nil: leave them (no routes file, or still none and
    /// the bundled simulator serving).
    public func prepareReload() throws -> PreparedRouteReload? {
        guard let path = routesFile else { return nil }
        let specs = fixedRoutes + (try APNsRouteSpec.parseFile(path: path))
        if specs.isEmpty {
            guard gateway.routes.allSatisfy(\.identity.isEmpty) else {
                throw RouteReloadError("APNs routes file \(path) has no routes")
            }
            return nil
        }
        let routes = try APNsRouteSpec.makeRoutes(specs, responseTimeout: responseTimeout, reusing: gateway.routes)
        let gateway = gateway
        return PreparedRouteReload {
            let before = gateway.routes
            let retired = gateway.replaceRoutes(routes)
            var metadata = PreparedRouteReload.changes(
                from: before.map { ($0.name, $0.identity) }, to: routes.map { ($0.name, $0.identity) }, prefix: "")
            metadata["pools_retired"] = "\(retired.count)"
            return .init(metadata: metadata, retirements: retired.map { client in { await gateway.retireWhenIdle(client) } })
        }
    }
}
