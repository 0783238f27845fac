import APNsProvider
import FCMProvider
import HeraldCore
import HeraldTestSupport
import PushProviders

@testable import HeraldService

extension DeliveryCoverage {
    /// Coverage by the real APNs and FCM providers over routings that serve
    /// `apnsEnvironments` of a bundle and the bundles `fcmRouted` accepts.
    init(apnsEnvironments: @escaping @Sendable (String) -> Set<APNsEnvironment>, fcmRouted: @escaping @Sendable (String) -> Bool) {
        let routing = CoverageRouting(apnsEnvironments: apnsEnvironments, fcmRouted: fcmRouted)
        self.init(providers: ProviderRegistry().registering(APNsPushProvider(routing: routing)).registering(FCMPushProvider(routing: routing)))
    }
}

/// Routes that only answer coverage questions (no client).
private struct CoverageRouting: APNsRouting, FCMRouting {
    let apnsEnvironments: @Sendable (String) -> Set<APNsEnvironment>
    let fcmRouted: @Sendable (String) -> Bool

    func client(bundleID: String, environment: APNsEnvironment?) -> FakeAPNsGateway? { nil }
    func client(bundleID: String) -> (client: FakeFCMSender, projectID: String)? { nil }
    func environments(serving bundleID: String) -> Set<APNsEnvironment> { apnsEnvironments(bundleID) }
    func serves(bundleID: String) -> Bool { fcmRouted(bundleID) }
    func shutdown() async {}
    func poolReports() async -> [ProviderPoolReport] { [] }
}
