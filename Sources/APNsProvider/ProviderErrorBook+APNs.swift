import APNs
import PushProviders

extension ProviderErrorBook {
    /// The reasons that mean the credentials (not the device or the payload)
    /// are wrong: every request on the pool fails until an operator acts.
    static let apnsAuthReasons: Set<APNsReason> = [
        .invalidProviderToken, .expiredProviderToken, .missingProviderToken, .badCertificate,
        .badCertificateEnvironment, .forbidden, .unrelatedKeyIdInToken, .badEnvironmentKeyInToken,
    ]
}
