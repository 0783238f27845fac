package import APNs
import Logging
package import PushProviders

extension ProviderErrorBook {
    /// The reasons that mean the credentials (not the device or the payload)
    /// are wrong: every request on the pool fails until an operator acts.
    static let apnsAuthReasons: Set<APNsReason> = [
        .invalidProviderToken, .expiredProviderToken, .missingProviderToken, .badCertificate,
        .badCertificateEnvironment, .forbidden, .unrelatedKeyIdInToken, .badEnvironmentKeyInToken,
    ]

    /// A request the pool got an answer to (or gave up on): an error
    /// (`error` non-nil) is kept as the last one; an auth refusal is counted
    /// and, first in its streak, logged at error level.
    func record(pool: ObjectIdentifier, route: String, error: String?, authReason: APNsReason?, logger: Logger) {
        record(pool: pool, route: route, error: error, authReason: authReason?.rawValue, service: "APNs", logger: logger)
    }
}

/// One pool as Status reports it.
package struct APNsPoolReport: Sendable {
    package var status: APNsPoolStatus
    package var route: String
    package var errors: ProviderErrorBook.Entry
    /// Every bundle the routes sharing this pool serve (`*`: all): Status
    /// shows a bundle-scoped token only the pools that serve its bundles.
    package var bundleIDs: Set<String> = ["*"]
}
