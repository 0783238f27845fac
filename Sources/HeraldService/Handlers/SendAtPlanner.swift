import HeraldCore
import HeraldStorage
import TimeZones

/// `ScheduleResponse.send_at` under the bundle's delivery policy (SPEC §4b:
/// "the earliest planned push of the message"): for an alert push, each
/// device's planned instant — its local send time, moved past quiet hours —
/// and the earliest of them. The caps are not foreseen (they depend on
/// what else reaches the user before then); a device the rules would
/// withhold plans nothing. Without rules or devices, the plain plan.
struct SendAtPlanner: Sendable {
    var rules = DeliveryPolicyHolder()
    var zones = ZoneCache()

    func sendAt(_ stored: StoredMessage, message: PushMessage, planned: Int64, alert: Bool, devices: [Device], graceSeconds: Int64) -> Int64 {
        guard alert, !devices.isEmpty else { return planned }
        let rules = self.rules.rules(for: stored.bundleID)
        let push = stored.policyPush(message, dueAt: planned, graceSeconds: graceSeconds)
        guard rules?.holdsPushes == true || push.localSendTime != nil else { return planned }
        let policy = DeliveryPolicy()
        var first: Int64?
        for device in devices {
            let zone = zones.resolve(device: device.timezone, policy: rules?.timezone)
            let at: Int64? = switch policy.verdict(rules: rules, zone: zone, push: push, caps: .none, now: planned) {
            case .send: planned
            case .hold(let until, _): until
            case .suppress: nil
            }
            if let at { first = min(first ?? at, at) }
        }
        return first ?? planned
    }
}
