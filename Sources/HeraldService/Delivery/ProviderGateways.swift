public import APNsProvider
public import FCMProvider
import Logging
public import PushProviders

/// The provider gateways a running Herald wires (each owns its routes, its
/// clients, its books and its bundled simulator) and the one place they are
/// registered as providers (``providers``): the dispatcher, Schedule's
/// coverage check and shutdown reach them only through that registry.
/// Status and SIGHUP reach them through the same seam (pool reports,
/// ``routeReloads(_:logger:)``).
public struct ProviderGateways: Sendable {
    public let apns: APNsGateway
    public let fcm: FCMGateway
    /// Every provider, one per platform: a third provider is one more
    /// `registering` line here.
    public let providers: ProviderRegistry

    public init(apns: APNsGateway, fcm: FCMGateway) {
        self.apns = apns
        self.fcm = fcm
        providers = ProviderRegistry()
            .registering(APNsPushProvider(routing: apns))
            .registering(FCMPushProvider(routing: fcm))
    }

    /// The dispatcher's providers, telling `lateness` how late each due
    /// message was claimed.
    public func registry(lateness: @escaping @Sendable (_ milliseconds: Int64) -> Void = { _ in }) -> ProviderRegistry {
        var registry = providers
        registry.lateness = lateness
        return registry
    }

    /// Every provider's SIGHUP route reload from `sources`, in this order.
    func routeReloads(_ sources: ReloadSources, logger: Logger) -> [any RouteReloading] {
        [
            APNsRouteReload(
                gateway: apns, fixedRoutes: sources.fixedRoutes, routesFile: sources.routesFile, responseTimeout: sources.responseTimeout),
            FCMRouteReload(
                gateway: fcm, fixedRoutes: sources.fixedFCMRoutes, routesFile: sources.fcmRoutesFile,
                ratePerMinute: sources.fcmRatePerMinute, logger: logger),
        ]
    }

    /// Shuts every provider down (clients, retired clients, simulators).
    public func shutdown() async {
        await providers.shutdown()
    }
}
