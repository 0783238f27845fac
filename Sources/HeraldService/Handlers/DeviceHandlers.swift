import GRPCServer
import HeraldCore
import HeraldProtos
import HeraldStore

/// `herald.v1.DeviceService`: a user's devices, upserted by
/// (bundle_id, device_token).
struct DeviceHandlers: Sendable {
    static let registerPath = "/herald.v1.DeviceService/RegisterDevice"
    static let unregisterPath = "/herald.v1.DeviceService/UnregisterDevice"

    let policy: AccessPolicy
    let store: any HeraldStore
    let clock: any HeraldClock

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
            let locale = decoder.string(wire.locale, "locale")
            if !locale.isEmpty && !LocaleResolver.isWellFormed(locale) {
                decoder.check("\"\(locale)\" is not a locale tag", "locale")
            }
            let timezone = decoder.string(wire.timezone, "timezone")
            decoder.check(Self.timezoneProblem(timezone), "timezone")
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

    /// IANA names look like `Area/Location[/Sub]`, `UTC` or `Etc/GMT+1`.
    static func timezoneProblem(_ name: String) -> String? {
        if name.isEmpty { return nil }
        guard name.utf8.count <= 64 else { return "is longer than 64 bytes" }
        let allowed = name.utf8.allSatisfy { byte in
            (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+")
        }
        guard allowed, !name.hasPrefix("/"), !name.hasSuffix("/"), !name.contains("//") else {
            return "\"\(name)\" is not an IANA time zone name (e.g. Europe/Zurich)"
        }
        return nil
    }
}
