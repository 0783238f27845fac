import GRPCEngine
import HeraldCore
import HeraldPrimitives
import HeraldProtos
import HeraldStorage
@testable import HeraldService

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
        case getMessage, listMessages, campaignReport

        /// The route's path on the server.
        var path: String {
            switch self {
            case .schedule: ScheduleService.path
            case .cancel: CancelService.path
            case .render: RenderService.path
            case .registerDevice: DeviceHandlers.registerPath
            case .unregisterDevice: DeviceHandlers.unregisterPath
            case .reportEvent: ReportEventService.path
            case .status: StatusService.path
            case .healthCheck: HealthService.checkPath
            case .healthWatch: HealthWatchService.path
            case .reflectionV1: ReflectionService.v1Path
            case .reflectionV1Alpha: ReflectionService.v1alphaPath
            case .getMessage: GetMessageService.path
            case .listMessages: ListMessagesService.path
            case .campaignReport: CampaignReportService.path
            }
        }
    }

    /// Every route's path, for the coverage test.
    static var paths: [String] { RPC.allCases.map(\.path) }

    /// Every method of the services the server registers: herald.v1's from
    /// the generated service descriptors, Health's and reflection's by name.
    static var declaredPaths: [String] {
        var paths = [HealthService.checkPath, HealthWatchService.path, ReflectionService.v1Path, ReflectionService.v1alphaPath]
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
        let service = ServiceHarness.shared
        let request = GRPCRequest(path: "/fuzz/\(rpc)", message: message)
        switch rpc {
        case .schedule:
            // Schedule's one path: through the store's callback, as served.
            let schedule = GRPCUnaryHandler.deferred(inlineBytes: .max) { try service.schedule.schedule($0, reply: DomainReply($1)) }
            try ServiceHarness.wait { try await schedule.callInProcess(request) }
            try dispatch(message)
        case .cancel: try ServiceHarness.wait { try await service.cancel.cancel(request) }
        case .render: _ = try service.render.render(request)
        case .registerDevice: try ServiceHarness.wait { try await service.devices.register(request) }
        case .unregisterDevice: try ServiceHarness.wait { try await service.devices.unregister(request) }
        case .reportEvent: try ServiceHarness.wait { try await service.report.report(request) }
        case .status: _ = try service.status.status(request)
        case .healthCheck: _ = try service.health.check(request)
        case .healthWatch:
            // The first answer (the status now, or SERVICE_UNKNOWN) ends the
            // watch: the stream would otherwise wait for the next change.
            let watch = service.watch
            do {
                try ServiceHarness.wait {
                    try await watch.watch(request: message) { _ in throw FirstAnswerSent() }
                    return []
                }
            } catch is FirstAnswerSent {}
        case .reflectionV1, .reflectionV1Alpha:
            // Failures are error_responses inside the stream: always an answer.
            precondition(!service.reflection.respond(to: message).isEmpty, "reflection answered nothing")
        case .getMessage: try ServiceHarness.wait { try await service.getMessage.get(request) }
        case .listMessages: try ServiceHarness.wait { try await service.listMessages.list(request) }
        case .campaignReport: try ServiceHarness.wait { try await service.campaignReport.report(request) }
        }
    }

    private struct FirstAnswerSent: Error {}

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
