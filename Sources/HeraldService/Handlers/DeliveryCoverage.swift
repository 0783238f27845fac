import HeraldCore
import HeraldStorage
import PushProviders

/// What Schedule checks before it stores anything (it tells the truth up
/// front): whether any configured route or sender could ever deliver the
/// message (else FAILED_PRECONDITION), and what may still keep it from a
/// device but can resolve before it is due (`ScheduleResponse.warnings`).
/// It asks the registered providers (``PushProvider/missingRoute(bundleID:)``,
/// ``PushProvider/routeWarnings(bundleID:devices:)``) and names none.
struct DeliveryCoverage: Sendable {
    /// The providers asked; nil checks nothing.
    let providers: ProviderRegistry?

    /// Checks nothing: every bundle routed on every platform (unit tests of
    /// other parts of Schedule).
    static let unchecked = DeliveryCoverage(providers: nil)

    /// The routes of `providers` (a running Herald's).
    init(providers: ProviderRegistry?) {
        self.providers = providers
    }

    /// Why no configured route or sender could ever deliver a message of
    /// `platform` for `bundleID`; nil when one could.
    func missing(bundleID: String, platform: Platform) -> String? {
        guard let providers else { return nil }
        let why: String
        if let provider = providers.provider(for: platform) {
            guard let missing = provider.missingRoute(bundleID: bundleID) else { return nil }
            why = missing
        } else {
            why = "no provider delivers to this platform"
        }
        return "bundle_id \(ErrorText.quote(bundleID)), platform \(Self.wireName(platform)): \(why); nothing was stored"
    }

    /// What may still keep the message from a device: the user has no
    /// registered device for the platform yet, or the platform's provider
    /// warns (e.g. none in an environment a route serves). Both can change
    /// before the message is due.
    func warnings(bundleID: String, platform: Platform, userID: String, devices: [Device]) -> [String] {
        guard !devices.isEmpty else {
            return ["user_id \(ErrorText.quote(userID)) has no registered \(Self.wireName(platform)) device in \(ErrorText.quote(bundleID)) yet: "
                    + "the message ends NO_DEVICES unless one registers before it is due"]
        }
        return providers?.provider(for: platform)?.routeWarnings(bundleID: bundleID, devices: devices) ?? []
    }

    /// The platform's name on the wire (`PLATFORM_IOS`).
    private static func wireName(_ platform: Platform) -> String { "PLATFORM_\(platform.rawValue.uppercased())" }
}
