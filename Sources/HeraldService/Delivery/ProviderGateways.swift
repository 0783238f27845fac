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

    /// Starts every provider's gateway from `configuration`: on its routes,
    /// or on its bundled simulator when it has none. When one cannot start,
    /// the ones started before it are shut down.
    static func start(_ configuration: HeraldConfiguration, logger: Logger) async throws -> ProviderGateways {
        let fcm: FCMGateway
        if let routes = configuration.fcmRoutes {
            fcm = FCMGateway(routes: routes)
        } else {
            var setup = configuration.fcmSimulator
            setup.recordTo = configuration.simulatorRecordPath
            fcm = try await FCMGateway.embedded(setup: setup, ratePerMinute: configuration.fcmRatePerMinute, logger: logger)
        }
        do {
            if let routes = configuration.apnsRoutes {
                return ProviderGateways(apns: APNsGateway(routes: routes), fcm: fcm)
            }
            return ProviderGateways(apns: try await APNsGateway.embedded(
                faults: configuration.simulatorFaults, responseTimeout: configuration.apnsResponseTimeout, logger: logger), fcm: fcm)
        } catch {
            await fcm.shutdown()
            throw error
        }
    }

    /// Has every gateway record its delivery metrics in `metrics` and log
    /// auth refusals through `logger`.
    func observe(metrics: any DeliveryMetrics, logger: Logger) {
        apns.observe(metrics: metrics, logger: logger)
        fcm.observe(metrics: metrics, logger: logger)
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
