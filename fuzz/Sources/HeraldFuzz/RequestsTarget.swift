import GRPCEngine
import HeraldCore
import HeraldPrimitives
import HeraldProtos
import HeraldStorage
@testable import HeraldService

/// Input: one selector byte (`RPC`, modulo 6), then a serialized request
/// message, handed to the server's own handler for that RPC
/// (`ServiceHarness`: nesting check, protobuf-c unpack, decoding, validation,
/// authorization, the store). A Schedule the handler accepted goes on to
/// what the dispatcher does when it sends: decode the stored request again
/// and render the alert (and the handoff, for context-aware delivery) or the
/// FCM message for several device locales.
enum RequestsTarget {
    enum RPC: UInt8, CaseIterable {
        case schedule, cancel, render, registerDevice, unregisterDevice, reportEvent
    }

    /// Device locales the dispatcher may render for: none, exact, fallback, unknown.
    static let deviceLocales: [String] = ["", "de-CH", "pt", "zz-ZZ"]

    static func run(_ input: [UInt8]) {
        _ = answer(input)
    }

    /// "ok" or the error the server would answer with.
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
        let service = ServiceHarness.shared
        let request = GRPCRequest(path: "/fuzz/\(rpc)", message: message)
        switch rpc {
        case .schedule:
            try ServiceHarness.wait { try await service.schedule.schedule(request) }
            try dispatch(message)
        case .cancel: try ServiceHarness.wait { try await service.cancel.cancel(request) }
        case .render: _ = try service.render.render(request)
        case .registerDevice: try ServiceHarness.wait { try await service.devices.register(request) }
        case .unregisterDevice: try ServiceHarness.wait { try await service.devices.unregister(request) }
        case .reportEvent: try ServiceHarness.wait { try await service.report.report(request) }
        }
    }

    /// The dispatcher's side of an accepted Schedule request.
    static func dispatch(_ bytes: [UInt8]) throws {
        let input = try ProtobufC.withUnpacked(Herald__V1__ScheduleRequest.self, from: bytes) { wire in
            var decoder = RequestDecoder()
            return decoder.scheduleInput(wire)
        }
        let now = ServiceHarness.nowMilliseconds
        let validated = try Validator.validate(
            input, now: Timestamp(milliseconds: now), split: ABSplit(), graceSeconds: 30,
            generateIdempotencyKey: { "fuzz-key" })
        let message = validated.message
        let stored = StoredMessage(
            id: "fuzz-id", bundleID: message.bundleID, platform: message.platform, userID: validated.userID,
            campaignID: validated.campaignID, idempotencyKey: message.idempotencyKey,
            deliveryMethod: validated.method, abTest: validated.abTest,
            windowStart: validated.window.start.milliseconds, windowEnd: validated.window.end.milliseconds,
            dueAt: validated.plan.sendAt.milliseconds, request: bytes, createdAt: now)
        let sendable = try StoredRequest.decode(stored.request, idempotencyKey: stored.idempotencyKey)
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
}
