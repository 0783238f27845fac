import GRPCEngine
import HeraldCore
import HeraldPrimitives
import HeraldProtos
import HeraldStorage
import HeraldService

/// Input: one selector byte (`RPC`, modulo the number of routes), then a
/// serialized request message, handed to the server's own handler for that
/// route (`ServiceHarness`: nesting check, protobuf-c unpack, decoding,
/// validation, authorization, the store). Every route the server registers
/// is here — the unauthenticated ones (Status, Health, reflection) and the
/// streaming ones included (`HeraldFuzzTests` checks the list against the
/// generated service descriptors). A Schedule the handler accepted goes on to
/// what the dispatcher does when it sends: decode the stored request again
/// and render the alert (and the handoff, for context-aware delivery) or the
/// FCM message for several device locales.
enum RequestsTarget {
    /// New routes go at the end: a seed's selector byte keeps its meaning.
    enum RPC: UInt8, CaseIterable {
        case schedule, cancel, render, registerDevice, unregisterDevice, reportEvent
        case status, healthCheck, healthWatch, reflectionV1, reflectionV1Alpha
        case getMessage, listMessages, campaignReport, streamEvents

        /// The route's path on the server (`OfflineHandlers.paths` lists
        /// them in this order).
        var path: String { OfflineHandlers.paths[Int(rawValue)] }
    }

    /// Every route's path, for the coverage test.
    static var paths: [String] { RPC.allCases.map(\.path) }

    /// Every method of the services the server registers: herald.v1's from
    /// the generated service descriptors, Health's and reflection's by name.
    static var declaredPaths: [String] {
        var paths = [RPC.healthCheck, .healthWatch, .reflectionV1, .reflectionV1Alpha].map(\.path)
        for service in [herald__v1__push_service__descriptor, herald__v1__device_service__descriptor] {
            guard let methods = service.methods else { continue }
            let name = String(cString: service.name)
            for index in 0..<Int(service.n_methods) {
                paths.append("/\(name)/\(String(cString: methods[index].name))")
            }
        }
        return paths
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
        let handlers = ServiceHarness.shared.handlers
        switch rpc {
        case .reflectionV1, .reflectionV1Alpha:
            // Failures are error_responses inside the stream: always an answer.
            let answer = try ServiceHarness.wait { try await handlers.call(path: rpc.path, message: message) }
            precondition(!answer.isEmpty, "reflection answered nothing")
        default:
            _ = try ServiceHarness.wait { try await handlers.call(path: rpc.path, message: message) }
            if rpc == .schedule { try dispatch(message) }
        }
    }

    /// The dispatcher's side of an accepted Schedule request.
    static func dispatch(_ bytes: [UInt8]) throws {
        let input = try OfflineHandlers.scheduleInput(bytes)
        let now = ServiceHarness.nowMilliseconds
        let validated = try Validator.validate(
            input, now: Timestamp(milliseconds: now), split: ABSplit(), graceSeconds: ServiceHarness.graceSeconds,
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
