public import APNsProvider
public import FCMProvider
public import PushProviders

/// The provider gateways a running Herald wires (each owns its routes, its
/// clients, its books and its bundled simulator): what Status, SIGHUP and
/// shutdown reach. The dispatcher sees them only as providers
/// (``registry(lateness:)``).
public struct ProviderGateways: Sendable {
    public let apns: APNsGateway
    public let fcm: FCMGateway

    public init(apns: APNsGateway, fcm: FCMGateway) {
        self.apns = apns
        self.fcm = fcm
    }

    /// The dispatcher's providers, one per platform: a third provider is
    /// one more `registering` line here.
    public func registry(lateness: @escaping @Sendable (_ milliseconds: Int64) -> Void = { _ in }) -> ProviderRegistry {
        ProviderRegistry(lateness: lateness)
            .registering(APNsPushProvider(routing: apns))
            .registering(FCMPushProvider(routing: fcm))
    }

    /// Shuts every gateway down (clients, retired clients, simulators).
    public func shutdown() async {
        await apns.shutdown()
        await fcm.shutdown()
    }
}
