import GRPCEngine
package import HeraldCore
import HeraldProtos
package import HeraldStorage
package import Logging

/// Every RPC handler the server registers, wired as `HeraldServer` wires
/// them but with no network: a given store, a scheduler that is never
/// started, no APNs or FCM route, a given clock. The seam through which code
/// outside this module (the fuzz harness) runs exactly the handler code the
/// server runs with no testing-only import (so release builds compile it).
package struct OfflineHandlers: Sendable {
    /// Every route's path, in a fixed order (the server's routes; Health's
    /// and reflection's included).
    package static let paths: [String] = [
        ScheduleService.path, CancelService.path, RenderService.path,
        DeviceHandlers.registerPath, DeviceHandlers.unregisterPath, ReportEventService.path,
        StatusService.path, HealthService.checkPath, HealthWatchService.path,
        ReflectionService.v1Path, ReflectionService.v1alphaPath,
        GetMessageService.path, ListMessagesService.path, CampaignReportService.path, StreamEventsService.path,
    ]

    private let schedule: ScheduleService
    private let cancel: CancelService
    private let render: RenderService
    private let devices: DeviceHandlers
    private let report: ReportEventService
    private let status: StatusService
    private let health: HealthService
    private let watch: HealthWatchService
    private let reflection: ReflectionService
    private let getMessage: GetMessageService
    private let listMessages: ListMessagesService
    private let campaignReport: CampaignReportService
    /// nil when the store keeps no event log.
    private let events: StreamEventsService?

    /// Handlers over `store` with an open access policy; `now` is the
    /// clock's time, `graceSeconds` Schedule's grace.
    package init(store: any ServableStore, clock: any HeraldClock, graceSeconds: Int64, logger: Logger) {
        let policy = AccessPolicy()
        let scheduler = Scheduler(clock: clock, logger: logger)
        let now = clock.now()
        schedule = ScheduleService(
            policy: policy, store: store, scheduler: scheduler, clock: clock, split: ABSplit(), graceSeconds: graceSeconds)
        // Revokes owed by cancels are queued, never sent: no delivery runs here.
        cancel = CancelService(policy: policy, store: store, scheduler: scheduler, revokes: RevokeQueue(), clock: clock)
        render = RenderService(policy: policy, now: { clock.now() })
        devices = DeviceHandlers(policy: policy, store: store, clock: clock)
        report = ReportEventService(policy: policy, store: store, scheduler: scheduler, clock: clock)
        let state = ServingStateCell()
        status = StatusService(
            version: "offline", startedAtMilliseconds: now, startedAt: .now, state: state,
            serverStats: { GRPCServerStats(connectionsOpen: 0, rpcsInFlight: 0, rpcsTotal: 0, bufferedRequestBytes: 0) })
        health = HealthService(state: state)
        watch = HealthWatchService(state: state)
        reflection = ReflectionService()
        getMessage = GetMessageService(policy: policy, store: store)
        listMessages = ListMessagesService(policy: policy, store: store)
        campaignReport = CampaignReportService(policy: policy, store: store)
        // One read, then the stream ends (it would otherwise poll for more).
        events = (store as? any DeliveryEventLog).map {
            StreamEventsService(policy: policy, log: $0, slots: StreamSlots(capacity: 1), pollInterval: .zero) { _ in
                throw FirstAnswer.Sent()
            }
        }
    }

    /// The handler's answer to one request message on `path`; thrown errors
    /// are the server's answers. A streaming route (Health/Watch) answers
    /// with its first message; reflection with its whole reply.
    package func call(path: String, message: [UInt8]) async throws -> [UInt8] {
        let request = GRPCRequest(path: path, message: message)
        switch path {
        case ScheduleService.path:
            // Schedule's one path: through the store's callback, as served.
            let schedule = self.schedule
            let handler = GRPCUnaryHandler.deferred(inlineBytes: .max) { try schedule.schedule($0, reply: DomainReply($1)) }
            return try await handler.callInProcess(request)
        case CancelService.path: return try await cancel.cancel(request)
        case RenderService.path: return try render.render(request)
        case DeviceHandlers.registerPath: return try await devices.register(request)
        case DeviceHandlers.unregisterPath: return try await devices.unregister(request)
        case ReportEventService.path: return try await report.report(request)
        case StatusService.path: return try status.status(request)
        case HealthService.checkPath: return try health.check(request)
        case HealthWatchService.path:
            // The first answer (the status now, or SERVICE_UNKNOWN) ends the
            // watch: the stream would otherwise wait for the next change.
            let first = FirstAnswer()
            do {
                try await watch.watch(request: message) { answer in
                    first.bytes = answer
                    throw FirstAnswer.Sent()
                }
            } catch is FirstAnswer.Sent {}
            return first.bytes
        case ReflectionService.v1Path, ReflectionService.v1alphaPath: return reflection.respond(to: message)
        case GetMessageService.path: return try await getMessage.get(request)
        case ListMessagesService.path: return try await listMessages.list(request)
        case CampaignReportService.path: return try await campaignReport.report(request)
        case StreamEventsService.path:
            // The first event ends the stream; none (one read) answers nothing.
            guard let events else { throw GRPCStatus(.unimplemented, "method not found: \(path)") }
            let first = FirstAnswer()
            do {
                try await events.stream(request) { page in
                    first.bytes = page.first ?? []
                    throw FirstAnswer.Sent()
                }
            } catch is FirstAnswer.Sent {}
            return first.bytes
        default: throw GRPCStatus(.unimplemented, "method not found: \(path)")
        }
    }

    /// A Schedule request message decoded as the Schedule handler decodes it.
    package static func scheduleInput(_ bytes: [UInt8]) throws -> ScheduleInput {
        try ProtobufC.withUnpacked(Herald__V1__ScheduleRequest.self, from: bytes) { wire in
            var decoder = RequestDecoder()
            return decoder.scheduleInput(wire)
        }
    }

    /// Written by the watch's send before it throws, read after the watch returned.
    private final class FirstAnswer: @unchecked Sendable {
        struct Sent: Error {}
        var bytes: [UInt8] = []
    }
}
