import HeraldCore
import TimeZones

/// ns per delivery-policy decision for one device push (issue 26's budget:
/// ≤ 5 µs): quiet hours 22:00-08:00, two caps (3/24h per user, 1/7d per
/// campaign) with counted sends on record, in Europe/Berlin (DST). The
/// instants cycle through 64 spread over a year, so some pushes fall in
/// quiet hours (held to their end), some are capped, most are sent.
func benchPolicy() throws {
    let policy = DeliveryPolicy()
    let rules = try PolicyRules.parse(
        "bundles=com.example.shop timezone=Europe/Berlin quiet-hours=22:00-08:00 cap=3/24h campaign-cap=1/7d"
    ) { _ in nil }
    let cache = ZoneCache()
    let berlin = cache.rules(named: "Europe/Berlin")!
    let start: Int64 = 1_767_225_600_000  // 2026-01-01T00:00:00Z
    let instants = (0..<64).map { start + Int64($0) * 20_221_000 * 24 + Int64($0 % 24) * 3_600_000 }
    let hour: Int64 = 3_600_000
    // Every fourth user is at the 3/24h cap (held until a send leaves).
    let histories = instants.enumerated().map { k, t in
        CapHistory(user: [t - 30 * hour, t - 20 * hour, t - 2 * hour] + (k % 4 == 0 ? [t - hour] : []), campaign: [t - 8 * 24 * hour])
    }
    var i = 0
    func next() -> Int { i = (i + 1) & 63; return i }
    func code(_ verdict: PolicyVerdict) -> Int {
        switch verdict {
        case .send: 1
        case .hold(let until, _): Int(truncatingIfNeeded: until)
        case .suppress: 2
        }
    }

    var mix = [0, 0, 0]
    for k in 0..<64 {
        let t = instants[k]
        let push = PolicyPush(dueAt: t, windowStart: t, windowEnd: t + 48 * hour, expiresAt: t + 72 * hour)
        switch policy.verdict(rules: rules, zone: berlin, push: push, caps: histories[k], now: t) {
        case .send: mix[0] += 1
        case .hold: mix[1] += 1
        case .suppress: mix[2] += 1
        }
    }
    if filter.isEmpty || "policy".contains(filter) { print("policy verdict mix of the 64 pushes: \(mix[0]) send, \(mix[1]) hold, \(mix[2]) suppress") }
    measure("policy verdict (quiet hours + 2 caps, Berlin)", unit: "decision") {
        let k = next(), t = instants[k]
        let push = PolicyPush(dueAt: t, windowStart: t, windowEnd: t + 48 * hour, expiresAt: t + 72 * hour)
        return code(policy.verdict(rules: rules, zone: berlin, push: push, caps: histories[k], now: t))
    }
    measure("policy verdict + zone cache lookup", unit: "decision") {
        let k = next(), t = instants[k]
        let zone = cache.resolve(device: "Europe/Berlin", policy: rules.timezone)
        let push = PolicyPush(dueAt: t, windowStart: t, windowEnd: t + 48 * hour, expiresAt: t + 72 * hour)
        return code(policy.verdict(rules: rules, zone: zone, push: push, caps: histories[k], now: t))
    }
    measure("policy verdict with local send time 09:00", unit: "decision") {
        let k = next(), t = instants[k]
        let push = PolicyPush(
            localSendTime: TimeOfDay(hour: 9, minute: 0), dueAt: t, windowStart: t, windowEnd: t + 48 * hour, expiresAt: t + 72 * hour)
        return code(policy.verdict(rules: rules, zone: berlin, push: push, caps: histories[k], now: t))
    }
}
