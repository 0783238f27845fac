import APNs
import Logging
import PushProviders

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
