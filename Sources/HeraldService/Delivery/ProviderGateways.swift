public import APNsProvider
public import FCMProvider
public import PushProviders

/// The provider gateways a running Herald wires (each owns its routes, its
/// clients, its books and its bundled simulator) and the one place they are
/// registered as providers (``providers``): the dispatcher, Schedule's
/// coverage check and shutdown reach them only through that registry.
/// Status and SIGHUP still read the gateways by name.
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

    /// Shuts every provider down (clients, retired clients, simulators).
    public func shutdown() async {
        await providers.shutdown()
    }
}
