/// An APNs error reason (the `reason` of the JSON body). Unknown strings are kept.
///
/// The list and status codes follow Apple's "Handling notification responses from APNs".
public struct APNsReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    // 400
    /// The collapse identifier exceeds the maximum allowed size (64 bytes).
    public static let badCollapseId = APNsReason(rawValue: "BadCollapseId")
    /// The specified device token is invalid (format, or wrong environment).
    public static let badDeviceToken = APNsReason(rawValue: "BadDeviceToken")
    /// The `apns-expiration` value is invalid.
    public static let badExpirationDate = APNsReason(rawValue: "BadExpirationDate")
    /// The `apns-id` value is invalid.
    public static let badMessageId = APNsReason(rawValue: "BadMessageId")
    /// The `apns-priority` value is invalid.
    public static let badPriority = APNsReason(rawValue: "BadPriority")
    /// The `apns-topic` value is invalid.
    public static let badTopic = APNsReason(rawValue: "BadTopic")
    /// The device token doesn't match the specified topic.
    public static let deviceTokenNotForTopic = APNsReason(rawValue: "DeviceTokenNotForTopic")
    /// One or more headers are repeated.
    public static let duplicateHeaders = APNsReason(rawValue: "DuplicateHeaders")
    /// Idle timeout.
    public static let idleTimeout = APNsReason(rawValue: "IdleTimeout")
    /// The `apns-push-type` value is invalid.
    public static let invalidPushType = APNsReason(rawValue: "InvalidPushType")
    /// The device token isn't specified in the request `:path`.
    public static let missingDeviceToken = APNsReason(rawValue: "MissingDeviceToken")
    /// The `apns-topic` header is missing and required.
    public static let missingTopic = APNsReason(rawValue: "MissingTopic")
    /// The message payload is empty.
    public static let payloadEmpty = APNsReason(rawValue: "PayloadEmpty")
    /// Pushing to this topic is not allowed.
    public static let topicDisallowed = APNsReason(rawValue: "TopicDisallowed")
    // 403
    /// The certificate is invalid.
    public static let badCertificate = APNsReason(rawValue: "BadCertificate")
    /// The client certificate is for the wrong environment.
    public static let badCertificateEnvironment = APNsReason(rawValue: "BadCertificateEnvironment")
    /// The provider token is stale and a new token should be generated.
    public static let expiredProviderToken = APNsReason(rawValue: "ExpiredProviderToken")
    /// The specified action is not allowed.
    public static let forbidden = APNsReason(rawValue: "Forbidden")
    /// The provider token is not valid, or the token signature can't be verified.
    public static let invalidProviderToken = APNsReason(rawValue: "InvalidProviderToken")
    /// No provider certificate was used and no provider token was specified.
    public static let missingProviderToken = APNsReason(rawValue: "MissingProviderToken")
    /// The key ID in the provider token isn't related to the key ID of the token used in the first push of this connection.
    public static let unrelatedKeyIdInToken = APNsReason(rawValue: "UnrelatedKeyIdInToken")
    /// The key ID in the provider token doesn't match the environment.
    public static let badEnvironmentKeyInToken = APNsReason(rawValue: "BadEnvironmentKeyInToken")
    // 404, 405
    /// The request contained an invalid `:path` value.
    public static let badPath = APNsReason(rawValue: "BadPath")
    /// The specified `:method` value isn't POST.
    public static let methodNotAllowed = APNsReason(rawValue: "MethodNotAllowed")
    // 410
    /// The device token has expired.
    public static let expiredToken = APNsReason(rawValue: "ExpiredToken")
    /// The device token is inactive for the specified topic.
    public static let unregistered = APNsReason(rawValue: "Unregistered")
    // 413
    /// The message payload is too large (4096 bytes for regular remote notifications).
    public static let payloadTooLarge = APNsReason(rawValue: "PayloadTooLarge")
    // 429
    /// The provider's authentication token is being updated too often (at most once every 20 minutes).
    public static let tooManyProviderTokenUpdates = APNsReason(rawValue: "TooManyProviderTokenUpdates")
    /// Too many requests were made consecutively to the same device token.
    public static let tooManyRequests = APNsReason(rawValue: "TooManyRequests")
    // 500, 503
    /// An internal server error occurred.
    public static let internalServerError = APNsReason(rawValue: "InternalServerError")
    /// The service is unavailable.
    public static let serviceUnavailable = APNsReason(rawValue: "ServiceUnavailable")
    /// The APNs server is shutting down.
    public static let shutdown = APNsReason(rawValue: "Shutdown")

    /// Every reason Apple documents, with its HTTP status.
    public static let documented: [APNsReason: Int] = [
        .badCollapseId: 400, .badDeviceToken: 400, .badExpirationDate: 400, .badMessageId: 400,
        .badPriority: 400, .badTopic: 400, .deviceTokenNotForTopic: 400, .duplicateHeaders: 400,
        .idleTimeout: 400, .invalidPushType: 400, .missingDeviceToken: 400, .missingTopic: 400,
        .payloadEmpty: 400, .topicDisallowed: 400,
        .badCertificate: 403, .badCertificateEnvironment: 403, .expiredProviderToken: 403,
        .forbidden: 403, .invalidProviderToken: 403, .missingProviderToken: 403,
        .unrelatedKeyIdInToken: 403, .badEnvironmentKeyInToken: 403,
        .badPath: 404, .methodNotAllowed: 405, .expiredToken: 410, .unregistered: 410,
        .payloadTooLarge: 413, .tooManyProviderTokenUpdates: 429, .tooManyRequests: 429,
        .internalServerError: 500, .serviceUnavailable: 503, .shutdown: 503,
    ]
}
