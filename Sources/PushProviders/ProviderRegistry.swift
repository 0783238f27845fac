public import HeraldCore
public import HeraldStorage

/// The providers the dispatcher delivers through, one per platform.
/// Registering a provider for a platform replaces the one before it.
public struct ProviderRegistry: Sendable {
    private var providers: [Platform: any PushProvider] = [:]
    /// Told how late each due message was claimed (send time minus due
    /// time, ms): the delivery metrics.
    public var lateness: @Sendable (_ milliseconds: Int64) -> Void

    public init(lateness: @escaping @Sendable (_ milliseconds: Int64) -> Void = { _ in }) {
        self.lateness = lateness
    }

    /// This registry with `provider` serving its platform.
    public func registering(_ provider: any PushProvider) -> ProviderRegistry {
        var copy = self
        copy.providers[provider.platform] = provider
        return copy
    }

    /// The provider for `platform`, if one is registered.
    public func provider(for platform: Platform) -> (any PushProvider)? { providers[platform] }

    /// Every registered provider, in platform order.
    public var all: [any PushProvider] {
        providers.sorted { $0.key.rawValue < $1.key.rawValue }.map(\.value)
    }

    /// Shuts every registered provider down, one after another.
    public func shutdown() async {
        for provider in all { await provider.shutdown() }
    }

    /// Every registered provider's pools, in platform order.
    public func poolReports() async -> [ProviderPoolReport] {
        var reports: [ProviderPoolReport] = []
        for provider in all { reports += await provider.poolReports() }
        return reports
    }

    /// The route for `device`, or why there is none.
    public func route(bundleID: String, device: Device) -> Result<any PushRoute, NoRoute> {
        guard let provider = providers[device.platform] else {
            return .failure(NoRoute("no provider for \(device.platform.rawValue)"))
        }
        return provider.route(bundleID: bundleID, device: device)
    }
}
