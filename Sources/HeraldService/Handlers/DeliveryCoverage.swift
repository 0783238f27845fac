import APNsProvider
import HeraldCore
import HeraldStorage

/// What Schedule checks before it stores anything (it tells the truth up
/// front): whether any configured route or sender could ever deliver the
/// message (else FAILED_PRECONDITION), and what may still keep it from a
/// device but can resolve before it is due (`ScheduleResponse.warnings`).
struct DeliveryCoverage: Sendable {
    /// The APNs environments routed for a bundle (empty: none).
    let apnsEnvironments: @Sendable (String) -> Set<APNsEnvironment>
    /// Whether an FCM route (or the bundled FCM simulator) serves a bundle
    /// (an Android package name).
    let fcmRouted: @Sendable (String) -> Bool

    /// Checks nothing: every bundle routed on both platforms (unit tests of
    /// other parts of Schedule).
    static let unchecked = DeliveryCoverage(apnsEnvironments: { _ in Set(APNsEnvironment.allCases) }, fcmRouted: { _ in true })

    /// The routes of a running Herald.
    init(gateway: ProviderGateways) {
        self.init(apnsEnvironments: { gateway.apns.environments(serving: $0) }, fcmRouted: { gateway.fcm.serves(bundleID: $0) })
    }

    init(apnsEnvironments: @escaping @Sendable (String) -> Set<APNsEnvironment>, fcmRouted: @escaping @Sendable (String) -> Bool) {
        self.apnsEnvironments = apnsEnvironments
        self.fcmRouted = fcmRouted
    }

    /// Why no configured route or sender could ever deliver a message of
    /// `platform` for `bundleID`; nil when one could.
    func missing(bundleID: String, platform: Platform) -> String? {
        switch platform {
        case .ios:
            guard apnsEnvironments(bundleID).isEmpty else { return nil }
            return "bundle_id \(ErrorText.quote(bundleID)), platform PLATFORM_IOS: no APNs route serves this bundle "
                + "(add one with --apns-route … bundles=\(bundleID)); nothing was stored"
        case .android:
            guard !fcmRouted(bundleID) else { return nil }
            return "bundle_id \(ErrorText.quote(bundleID)), platform PLATFORM_ANDROID: no FCM route serves this bundle "
                + "(add one with --fcm-route … bundles=\(bundleID)); nothing was stored"
        }
    }

    /// What may still keep the message from a device: the user has no
    /// registered device for the platform yet, or none in an environment a
    /// route serves. Both can change before the message is due.
    func warnings(bundleID: String, platform: Platform, userID: String, devices: [Device]) -> [String] {
        let name = platform == .ios ? "PLATFORM_IOS" : "PLATFORM_ANDROID"
        guard !devices.isEmpty else {
            return ["user_id \(ErrorText.quote(userID)) has no registered \(name) device in \(ErrorText.quote(bundleID)) yet: "
                    + "the message ends NO_DEVICES unless one registers before it is due"]
        }
        guard platform == .ios else { return [] }
        let routed = apnsEnvironments(bundleID)
        let environments = Set(devices.map { $0.environment ?? .production })
        guard routed.isDisjoint(with: environments) else { return [] }
        let have = environments.map(\.rawValue).sorted().joined(separator: ", ")
        let served = routed.map(\.rawValue).sorted().joined(separator: ", ")
        return ["the user's devices in \(ErrorText.quote(bundleID)) are all \(have); APNs routes for it serve only \(served): "
                + "the message fails unless a device registers in a routed environment before it is due"]
    }
}
