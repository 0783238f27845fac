import GRPCEngine
import HeraldCore
import HeraldProtos
import HeraldStorage

/// `herald.v1.DeviceService`: a user's devices, upserted by
/// (bundle_id, device_token).
struct DeviceHandlers: Sendable {
    static let registerPath = "/herald.v1.DeviceService/RegisterDevice"
    static let unregisterPath = "/herald.v1.DeviceService/UnregisterDevice"

    let policy: AccessPolicy
    let store: any HeraldStore
    let clock: any HeraldClock
    /// Which `timezone` names exist (the system tz database; injected so
    /// tests can use a fixed list).
    var timezones: TimeZoneDatabase = .system

    func register(_ request: GRPCRequest) async throws -> [UInt8] {
        let caller = try policy.authenticate(request.metadata)
        let device = try ProtobufC.withUnpacked(Herald__V1__RegisterDeviceRequest.self, from: request.message) { wire in
            var decoder = RequestDecoder()
            let bundleID = decoder.required(wire.bundle_id, "bundle_id", maxBytes: Validator.Limits.bundleID)
            if !bundleID.isEmpty { decoder.check(Validator.bundleIDProblem(bundleID), "bundle_id") }
            let platform = decoder.platform(wire.platform)
            if wire.platform == HERALD__V1__PLATFORM__PLATFORM_UNSPECIFIED { decoder.check("is required", "platform") }
            let userID = decoder.required(wire.user_id, "user_id", maxBytes: Validator.Limits.userID)
            let token = decoder.required(wire.device_token, "device_token", maxBytes: Validator.Limits.fcmToken)
            if let platform, !token.isEmpty { decoder.check(Validator.deviceTokenProblem(token, platform: platform), "device_token") }
            let locale = decoder.localeTag(wire.locale, "locale") ?? ""
            if !locale.isEmpty && locale.utf8.count <= Validator.Limits.localeTagBytes && !LocaleResolver.isWellFormed(locale) {
                decoder.check(ErrorText.quote(locale) + " is not a locale tag", "locale")
            }
            let timezone = decoder.string(wire.timezone, "timezone")
            decoder.check(timezones.problem(timezone), "timezone")
            var environment = decoder.environment(wire.environment)
            if platform == .ios && environment == nil && wire.environment == HERALD__V1__APNS_ENVIRONMENT__APNS_ENVIRONMENT_UNSPECIFIED {
                environment = .production
            }
            try decoder.finish()
            return Device(
                bundleID: bundleID, platform: platform!, userID: userID,
                // APNs tokens are hex: one spelling, so upserts match.
                deviceToken: platform == .ios ? token.lowercased() : token,
                locale: locale, timezone: timezone, environment: platform == .ios ? environment : nil,
                registeredAt: clock.now())
        }
        try policy.authorize(caller, bundleID: device.bundleID)
        let created = try await store.registerDevice(device)
        var response = Herald__V1__RegisterDeviceResponse.initialized()
        response.created = created ? 1 : 0
        return ProtobufC.pack(&response)
    }

    func unregister(_ request: GRPCRequest) async throws -> [UInt8] {
        let caller = try policy.authenticate(request.metadata)
        let (bundleID, token) = try ProtobufC.withUnpacked(Herald__V1__UnregisterDeviceRequest.self, from: request.message) { wire in
            var decoder = RequestDecoder()
            let bundleID = decoder.required(wire.bundle_id, "bundle_id", maxBytes: Validator.Limits.bundleID)
            let token = decoder.required(wire.device_token, "device_token", maxBytes: Validator.Limits.fcmToken)
            if !token.isEmpty { decoder.check(Self.unregisterTokenProblem(token), "device_token") }
            try decoder.finish()
            return (bundleID, token)
        }
        try policy.authorize(caller, bundleID: bundleID)
        var removed = try await store.unregisterDevice(bundleID: bundleID, deviceToken: token)
        if !removed && token != token.lowercased() {
            removed = try await store.unregisterDevice(bundleID: bundleID, deviceToken: token.lowercased())
        }
        var response = Herald__V1__UnregisterDeviceResponse.initialized()
        response.removed = removed ? 1 : 0
        return ProtobufC.pack(&response)
    }

    /// Why a token to unregister is neither an APNs token nor an FCM
    /// registration token, or nil. The request names no platform: a token
    /// of hex digits only is held to the APNs rules (SPEC §3: APNs tokens
    /// are hex); any other must look like an FCM token (letters, digits,
    /// `:`, `-`, `_`) never shorter than the shortest APNs token.
    static func unregisterTokenProblem(_ token: String) -> String? {
        let hexOnly = token.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || ((byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x66)
        }
        if hexOnly { return Validator.deviceTokenProblem(token, platform: .ios) }
        if token.utf8.count >= Validator.Limits.apnsTokenHexMin, Validator.deviceTokenProblem(token, platform: .android) == nil {
            return nil
        }
        return "must be an APNs device token (\(Validator.Limits.apnsTokenHexMin) to \(Validator.Limits.apnsTokenHexMax) hex digits) "
            + "or an FCM registration token"
    }
}
