public import FCM
public import HeraldCore

/// The one mapping from an FCM refusal (a non-200 answer, after the
/// client's retries) to an outcome kind and the reason recorded with it.
///
/// - UNREGISTERED (404): the token is gone: `unregistered`, the
///   registration is removed.
/// - SENDER_ID_MISMATCH (403): the token belongs to another sender (project):
///   `bad_device_token`, the registration is removed.
/// - INVALID_ARGUMENT (400) about the registration token: `bad_device_token`
///   (removed); about any other field: `rejected`, the reason naming it.
/// - QUOTA_EXCEEDED, UNAVAILABLE, INTERNAL (still failing when the client's
///   retries ran out), THIRD_PARTY_AUTH_ERROR, UNAUTHENTICATED and anything
///   else: `rejected` with the code and FCM's message as the reason.
public struct FCMRefusal: Sendable {
    public var kind: DeviceOutcomeKind
    public var reason: String

    /// Codes that mean the route's credentials (not the device or the
    /// message) are wrong: every request on the pool fails until an operator
    /// acts (Status `auth_failures`, an error log line).
    public static let authCodes: Set<FCMErrorCode> = [.thirdPartyAuthError, .unauthenticated]

    public init(_ response: FCMResponse) {
        let code = response.errorCode
        let detail = response.errorMessage.map { $0.isEmpty ? "" : ": \($0)" } ?? ""
        reason = (code?.rawValue ?? "HTTP \(response.status)") + detail
        switch code {
        case .unregistered?:
            kind = .unregistered
        case .senderIDMismatch?:
            kind = .badDeviceToken
        case .invalidArgument? where Self.namesToken(response.errorMessage):
            kind = .badDeviceToken
        default:
            kind = .rejected
        }
    }

    /// Whether FCM's INVALID_ARGUMENT message is about the registration
    /// token (`message.token`, "registration token") rather than the body.
    static func namesToken(_ message: String?) -> Bool {
        guard let message = message?.lowercased() else { return false }
        return message.contains("registration token") || message.contains("message.token")
    }
}
