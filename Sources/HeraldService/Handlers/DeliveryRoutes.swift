import GRPCEngine
import HeraldCore
import HeraldStorage

/// The delivery RPCs (Schedule, Cancel, ReportEvent, RegisterDevice,
/// UnregisterDevice) over a store and a scheduler, with their domain errors
/// mapped to gRPC statuses: what the server registers, and what handler
/// tests call in process (an in-memory store, a fake gateway).
struct DeliveryRoutes: Sendable {
    let policy: AccessPolicy
    let clock: any HeraldClock
    let split: ABSplit
    let graceSeconds: Int64
    /// What Schedule checks before storing (``DeliveryCoverage/unchecked`` in tests of other parts).
    var coverage: DeliveryCoverage = .unchecked

    func handlers(
        store: any HeraldStore, scheduler: Scheduler, revokes: RevokeQueue
    ) -> [(path: String, handler: GRPCUnaryHandler)] {
        let schedule = ScheduleService(
            policy: policy, store: store, scheduler: scheduler, clock: clock, split: split, graceSeconds: graceSeconds,
            coverage: coverage)
        let cancel = CancelService(policy: policy, store: store, scheduler: scheduler, revokes: revokes, clock: clock)
        let report = ReportEventService(policy: policy, store: store, scheduler: scheduler, clock: clock)
        let devices = DeviceHandlers(policy: policy, store: store, clock: clock)
        return [
            (ScheduleService.path, scheduleHandler(schedule, store: store)),
            (CancelService.path, DomainStatus.async(cancel.cancel)),
            (ReportEventService.path, DomainStatus.async(report.report)),
            (DeviceHandlers.registerPath, DomainStatus.async(devices.register)),
            (DeviceHandlers.unregisterPath, DomainStatus.async(devices.unregister)),
        ]
    }

    /// Without a Task on a `CallbackScheduling` store (SQLite, PostgreSQL); awaited otherwise.
    private func scheduleHandler(_ schedule: ScheduleService, store: any HeraldStore) -> GRPCUnaryHandler {
        guard let local = store as? any CallbackScheduling else { return DomainStatus.async(schedule.schedule) }
        return DomainStatus.deferred(inlineBytes: ScheduleService.inlineBytes) { request, reply in
            try schedule.schedule(request, reply: reply, on: local)
        }
    }
}
