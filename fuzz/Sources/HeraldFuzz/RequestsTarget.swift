import GRPCServer
import HeraldCore
import HeraldProtos
import HeraldStore
@testable import HeraldService

/// Input: one selector byte (`RPC`, modulo 6), then a serialized request
/// message, taken through what the server runs on a request before any
/// store or network I/O: unpack (nesting check + protobuf-c), the handler's
/// `RequestDecoder` calls and validation; Render through `RenderService`
/// itself; Schedule on to what the dispatcher renders when it sends.
///
/// The store-backed handlers (Cancel, RegisterDevice, UnregisterDevice,
/// ReportEvent, Schedule) decode inside their async methods, so their decode
/// closures are mirrored here line for line; keep them in step.
enum RequestsTarget {
    enum RPC: UInt8, CaseIterable {
        case schedule, cancel, render, registerDevice, unregisterDevice, reportEvent
    }

    /// A fixed clock (2026-01-01T00:00:00Z): runs are reproducible.
    static let nowMilliseconds: Int64 = 1_767_225_600_000
    static let render = RenderService(policy: AccessPolicy(), now: { nowMilliseconds })
    /// Device locales the dispatcher may render for: none, exact, fallback, unknown.
    static let deviceLocales: [String] = ["", "de-CH", "pt", "zz-ZZ"]

    static func run(_ input: [UInt8]) {
        guard let selector = input.first else { return }
        let rpc = RPC.allCases[Int(selector) % RPC.allCases.count]
        let message = Array(input.dropFirst())
        // Thrown errors are the server's answers (INVALID_ARGUMENT, …).
        _ = try? handle(rpc, message)
    }

    static func answer(_ input: [UInt8]) -> String {
        guard let selector = input.first else { return "empty input" }
        let rpc = RPC.allCases[Int(selector) % RPC.allCases.count]
        do {
            try handle(rpc, Array(input.dropFirst()))
            return "\(rpc): ok"
        } catch {
            return "\(rpc): \(error)"
        }
    }

    static func handle(_ rpc: RPC, _ message: [UInt8]) throws {
        switch rpc {
        case .schedule: try schedule(message)
        case .cancel: try cancel(message)
        case .render: _ = try render.render(GRPCRequest(path: RenderService.path, message: message))
        case .registerDevice: try registerDevice(message)
        case .unregisterDevice: try unregisterDevice(message)
        case .reportEvent: try reportEvent(message)
        }
    }

    /// `ScheduleService.schedule` up to the store, then the dispatcher's
    /// decode of the stored request and its renderings.
    static func schedule(_ bytes: [UInt8]) throws {
        let input = try ProtobufC.withUnpacked(Herald__V1__ScheduleRequest.self, from: bytes) { wire in
            var decoder = RequestDecoder()
            let input = decoder.scheduleInput(wire)
            try decoder.finish()
            return input
        }
        let validated = try Validator.validate(
            input, now: Timestamp(milliseconds: nowMilliseconds), split: ABSplit(), graceSeconds: 30,
            generateIdempotencyKey: { "fuzz-key" })
        let message = validated.message
        guard message.isEnabled(on: message.platform) else { return }
        let stored = StoredMessage(
            id: "fuzz-id", bundleID: message.bundleID, platform: message.platform, userID: validated.userID,
            campaignID: validated.campaignID, idempotencyKey: message.idempotencyKey,
            deliveryMethod: validated.method, abTest: validated.abTest,
            windowStart: validated.window.start.milliseconds, windowEnd: validated.window.end.milliseconds,
            dueAt: validated.plan.sendAt.milliseconds, request: bytes, createdAt: nowMilliseconds)
        let sendable = try Dispatcher.pushMessage(from: stored)
        let sendTime = validated.plan.sendAt
        for locale in deviceLocales {
            switch sendable.platform {
            case .ios:
                _ = try APNsRenderer.render(sendable, locale: locale, deviceToken: nil, apnsID: "fuzz", sendTime: sendTime)
                if validated.method == .contextAware {
                    _ = try APNsRenderer.renderHandoff(
                        sendable, locale: locale, deviceToken: nil, apnsID: "fuzz", sendTime: sendTime,
                        windowEnd: validated.window.end)
                }
            case .android:
                _ = try FCMRenderer.render(sendable, locale: locale, deviceToken: nil)
            }
        }
    }

    /// `CancelService.cancel`'s decode.
    static func cancel(_ bytes: [UInt8]) throws {
        _ = try ProtobufC.withUnpacked(Herald__V1__CancelRequest.self, from: bytes) { wire in
            var decoder = RequestDecoder()
            let bundleID = decoder.required(wire.bundle_id, "bundle_id", maxBytes: Validator.Limits.bundleID)
            let platform = decoder.platform(wire.platform)
            if platform == nil && wire.platform == HERALD__V1__PLATFORM__PLATFORM_UNSPECIFIED {
                decoder.check("is required", "platform")
            }
            let userID = decoder.required(wire.user_id, "user_id", maxBytes: Validator.Limits.userID)
            let campaignID = decoder.required(wire.campaign_id, "campaign_id", maxBytes: Validator.Limits.campaignID)
            let key = decoder.required(wire.idempotency_key, "idempotency_key", maxBytes: Validator.Limits.idempotencyKey)
            try decoder.finish()
            return (bundleID, platform!, userID, campaignID, key)
        }
    }

    /// `DeviceHandlers.register`'s decode.
    static func registerDevice(_ bytes: [UInt8]) throws {
        _ = try ProtobufC.withUnpacked(Herald__V1__RegisterDeviceRequest.self, from: bytes) { wire in
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
            decoder.check(DeviceHandlers.timezoneProblem(timezone), "timezone")
            var environment = decoder.environment(wire.environment)
            if platform == .ios && environment == nil && wire.environment == HERALD__V1__APNS_ENVIRONMENT__APNS_ENVIRONMENT_UNSPECIFIED {
                environment = .production
            }
            try decoder.finish()
            return Device(
                bundleID: bundleID, platform: platform!, userID: userID,
                deviceToken: platform == .ios ? token.lowercased() : token,
                locale: locale, timezone: timezone, environment: platform == .ios ? environment : nil,
                registeredAt: nowMilliseconds)
        }
    }

    /// `DeviceHandlers.unregister`'s decode.
    static func unregisterDevice(_ bytes: [UInt8]) throws {
        _ = try ProtobufC.withUnpacked(Herald__V1__UnregisterDeviceRequest.self, from: bytes) { wire in
            var decoder = RequestDecoder()
            let bundleID = decoder.required(wire.bundle_id, "bundle_id", maxBytes: Validator.Limits.bundleID)
            let token = decoder.required(wire.device_token, "device_token", maxBytes: Validator.Limits.fcmToken)
            try decoder.finish()
            return (bundleID, token)
        }
    }

    /// `ReportEventService.report`'s decode.
    static func reportEvent(_ bytes: [UInt8]) throws {
        _ = try ProtobufC.withUnpacked(Herald__V1__ReportEventRequest.self, from: bytes) { wire in
            var decoder = RequestDecoder()
            let bundleID = decoder.required(wire.bundle_id, "bundle_id", maxBytes: Validator.Limits.bundleID)
            let platform = decoder.platform(wire.platform)
            if wire.platform == HERALD__V1__PLATFORM__PLATFORM_UNSPECIFIED { decoder.check("is required", "platform") }
            let userID = decoder.required(wire.user_id, "user_id", maxBytes: Validator.Limits.userID)
            let key = decoder.required(wire.idempotency_key, "idempotency_key", maxBytes: Validator.Limits.idempotencyKey)
            let displayed: Bool
            switch wire.event {
            case HERALD__V1__MESSAGE_EVENT__MESSAGE_EVENT_DISPLAYED: displayed = true
            case HERALD__V1__MESSAGE_EVENT__MESSAGE_EVENT_OPENED: displayed = false
            default:
                decoder.check("must be MESSAGE_EVENT_DISPLAYED or MESSAGE_EVENT_OPENED", "event")
                displayed = false
            }
            let token = decoder.string(wire.device_token, "device_token")
            try decoder.finish()
            return (bundleID, platform!, userID, key, displayed, token)
        }
    }
}
