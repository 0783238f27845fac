import GRPCEngine
import HeraldCore
import HeraldStorage
import TimeZones

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
    /// The bundles' delivery-policy rules (a DISPLAYED report counts against the caps).
    var deliveryPolicies = DeliveryPolicyHolder()
    /// The zone cache shared with the dispatcher.
    var zones = ZoneCache()

    func handlers(
        store: any CallbackScheduling, scheduler: Scheduler, revokes: RevokeQueue
    ) -> [(path: String, handler: GRPCUnaryHandler)] {
        let schedule = ScheduleService(
            policy: policy, store: store, scheduler: scheduler, clock: clock, split: split, graceSeconds: graceSeconds,
            coverage: coverage, planner: SendAtPlanner(rules: deliveryPolicies, zones: zones))
        let cancel = CancelService(policy: policy, store: store, scheduler: scheduler, revokes: revokes, clock: clock)
        let report = ReportEventService(
            policy: policy, store: store, scheduler: scheduler, clock: clock, deliveryPolicies: deliveryPolicies)
        let devices = DeviceHandlers(policy: policy, store: store, clock: clock)
        return [
            // Without a Task, through the store's callback, on every store.
            (ScheduleService.path, DomainStatus.deferred(inlineBytes: ScheduleService.inlineBytes, schedule.schedule)),
            (CancelService.path, DomainStatus.async(cancel.cancel)),
            (ReportEventService.path, DomainStatus.async(report.report)),
            (DeviceHandlers.registerPath, DomainStatus.async(devices.register)),
            (DeviceHandlers.unregisterPath, DomainStatus.async(devices.unregister)),
        ]
    }
}
