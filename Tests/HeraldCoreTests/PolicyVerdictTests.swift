import HeraldPrimitives
import Testing
import TimeZones
@testable import HeraldCore

/// UNIX milliseconds of an RFC 3339 timestamp.
private func at(_ text: String) -> Int64 {
    let t = try! RFC3339.parse(text)
    return t.seconds * 1000 + Int64(t.nanoseconds) / 1_000_000
}

private let minute: Int64 = 60_000, hour: Int64 = 3_600_000, day: Int64 = 86_400_000

/// The zones of the machine's tzdata, each loaded once.
private enum Zones {
    static let cache = ZoneCache()
    static func load(_ name: String) -> ZoneRules { cache.rules(named: name)! }
}

/// The §4b verdict for one device's alert push (``DeliveryPolicy/verdict(rules:zone:push:caps:now:)``),
/// table-driven over zones with DST gaps and repeats, a 30-minute shift
/// (Lord Howe) and a skipped day (Apia).
@Suite("Delivery policy verdicts")
struct PolicyVerdictTests {
    static let policy = DeliveryPolicy()

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var zone = "Europe/Berlin"
        var spec: String? = "bundles=com.a quiet-hours=22:00-08:00"
        var now: String
        var windowEnd: String
        var windowStart: String?
        var localSendTime: String?
        var transactional = false
        var fallback = false
        var ttlEnd: String?
        var userSends: [String] = []
        var campaignSends: [String] = []
        var expected: PolicyVerdict
        var testDescription: String { name }
    }

    static func hold(_ until: String, _ reason: HoldReason) -> PolicyVerdict { .hold(until: at(until), reason: reason) }

    static let cases: [Case] = [
        // No rule holds anything.
        .init(name: "no policy: send", spec: nil, now: "2026-06-01T21:00:00Z", windowEnd: "2026-06-03T00:00:00Z", expected: .send),
        .init(name: "outside quiet hours: send", now: "2026-06-01T19:59:59Z", windowEnd: "2026-06-03T00:00:00Z", expected: .send),
        // Quiet hours, half-open, wrapping midnight (Berlin summer: UTC+2).
        .init(name: "quiet start is inside", now: "2026-06-01T20:00:00Z", windowEnd: "2026-06-03T00:00:00Z",
              expected: hold("2026-06-02T06:00:00Z", .quietHours)),
        .init(name: "after midnight inside", now: "2026-06-01T23:30:00Z", windowEnd: "2026-06-03T00:00:00Z",
              expected: hold("2026-06-02T06:00:00Z", .quietHours)),
        .init(name: "quiet end is outside", now: "2026-06-02T06:00:00Z", windowEnd: "2026-06-03T00:00:00Z", expected: .send),
        .init(name: "a window shorter than a day ends in quiet hours: suppressed", now: "2026-06-01T20:30:00Z",
              windowEnd: "2026-06-01T21:00:00Z", expected: .suppress(.quietHours)),
        .init(name: "hold ending exactly at window end: suppressed", now: "2026-06-01T21:00:00Z",
              windowEnd: "2026-06-02T06:00:00Z", expected: .suppress(.quietHours)),
        .init(name: "hold ending 1 ms before window end: held", now: "2026-06-01T21:00:00Z",
              windowEnd: "2026-06-02T06:00:00.001Z", expected: hold("2026-06-02T06:00:00Z", .quietHours)),
        .init(name: "hold past the TTL: suppressed", now: "2026-06-01T21:00:00Z", windowEnd: "2026-06-03T00:00:00Z",
              ttlEnd: "2026-06-02T05:59:59Z", expected: .suppress(.quietHours)),
        // DST: New York's spring-forward night (02:00 EST -> 03:00 EDT at 07:00Z), 22:00-08:00 is 9 h of UTC.
        .init(name: "New York spring forward", zone: "America/New_York", now: "2026-03-08T06:30:00Z",
              windowEnd: "2026-03-09T00:00:00Z", expected: hold("2026-03-08T12:00:00Z", .quietHours)),
        // New York's fall-back night: a quiet repeated hour is quiet both times.
        .init(name: "New York fall back, repeated hour quiet twice", zone: "America/New_York",
              spec: "bundles=com.a quiet-hours=01:00-02:00", now: "2026-11-01T05:30:00Z", windowEnd: "2026-11-02T00:00:00Z",
              expected: hold("2026-11-01T07:00:00Z", .quietHours)),
        // Lord Howe: a 30-minute DST shift (02:00 LHST -> 02:30 LHDT on 2026-10-04, at 15:30Z).
        .init(name: "Lord Howe: quiet end inside the 30-minute gap ends with it", zone: "Australia/Lord_Howe",
              spec: "bundles=com.a quiet-hours=23:00-02:15", now: "2026-10-03T14:00:00Z", windowEnd: "2026-10-05T00:00:00Z",
              expected: hold("2026-10-03T15:30:00Z", .quietHours)),
        // Apia skipped 2011-12-30 (23:59:59 -10 on the 29th, then 00:00 +14 on the 31st, at 10:00Z).
        .init(name: "Apia: quiet hours across the skipped day", zone: "Pacific/Apia",
              spec: "bundles=com.a quiet-hours=22:00-08:00", now: "2011-12-30T09:00:00Z", windowEnd: "2012-01-02T00:00:00Z",
              expected: hold("2011-12-30T18:00:00Z", .quietHours)),
        // Caps: cap=3/1h with exactly N-1, N and N+1 counted sends.
        .init(name: "cap 3/1h with 2 sends: send", spec: "bundles=com.a cap=3/1h", now: "2026-06-01T12:00:00Z",
              windowEnd: "2026-06-02T00:00:00Z", userSends: ["2026-06-01T11:10:00Z", "2026-06-01T11:20:00Z"], expected: .send),
        .init(name: "cap 3/1h with 3 sends: held until the oldest leaves", spec: "bundles=com.a cap=3/1h",
              now: "2026-06-01T12:00:00Z", windowEnd: "2026-06-02T00:00:00Z",
              userSends: ["2026-06-01T11:10:00Z", "2026-06-01T11:20:00Z", "2026-06-01T11:50:00Z"],
              expected: hold("2026-06-01T12:10:00Z", .frequencyCap)),
        .init(name: "cap 3/1h with 4 sends: held until two have left", spec: "bundles=com.a cap=3/1h",
              now: "2026-06-01T12:00:00Z", windowEnd: "2026-06-02T00:00:00Z",
              userSends: ["2026-06-01T11:10:00Z", "2026-06-01T11:20:00Z", "2026-06-01T11:50:00Z", "2026-06-01T11:55:00Z"],
              expected: hold("2026-06-01T12:20:00Z", .frequencyCap)),
        .init(name: "a send exactly one period ago no longer counts", spec: "bundles=com.a cap=1/1h",
              now: "2026-06-01T12:00:00Z", windowEnd: "2026-06-02T00:00:00Z", userSends: ["2026-06-01T11:00:00Z"], expected: .send),
        .init(name: "cap 1/1h: a 30-minute window suppresses", spec: "bundles=com.a cap=1/1h",
              now: "2026-06-01T12:00:00Z", windowEnd: "2026-06-01T12:30:00Z", userSends: ["2026-06-01T11:59:00Z"],
              expected: .suppress(.frequencyCap)),
        .init(name: "cap 1/1h: a 3-hour window waits an hour after the first", spec: "bundles=com.a cap=1/1h",
              now: "2026-06-01T12:00:00Z", windowEnd: "2026-06-01T15:00:00Z", userSends: ["2026-06-01T11:59:00Z"],
              expected: hold("2026-06-01T12:59:00Z", .frequencyCap)),
        .init(name: "cap hold ending exactly at window end: suppressed", spec: "bundles=com.a cap=1/1h",
              now: "2026-06-01T12:00:00Z", windowEnd: "2026-06-01T12:59:00Z", userSends: ["2026-06-01T11:59:00Z"],
              expected: .suppress(.frequencyCap)),
        .init(name: "two caps: the stricter decides", spec: "bundles=com.a cap=3/1h cap=4/1d",
              now: "2026-06-01T12:00:00Z", windowEnd: "2026-06-03T00:00:00Z",
              userSends: ["2026-06-01T01:00:00Z", "2026-06-01T02:00:00Z", "2026-06-01T11:30:00Z", "2026-06-01T11:40:00Z"],
              expected: hold("2026-06-02T01:00:00Z", .frequencyCap)),
        .init(name: "campaign cap counts only the campaign's sends", spec: "bundles=com.a campaign-cap=1/7d cap=5/1d",
              now: "2026-06-01T12:00:00Z", windowEnd: "2026-06-10T00:00:00Z",
              userSends: ["2026-06-01T11:00:00Z"], campaignSends: ["2026-05-30T12:00:00Z"],
              expected: hold("2026-06-06T12:00:00Z", .frequencyCap)),
        .init(name: "campaign cap with no campaign send: send", spec: "bundles=com.a campaign-cap=1/7d",
              now: "2026-06-01T12:00:00Z", windowEnd: "2026-06-10T00:00:00Z", userSends: ["2026-06-01T11:00:00Z"], expected: .send),
        // A cap hold that lands inside quiet hours (Berlin 22:00 = 20:00Z).
        .init(name: "cap hold lands in quiet hours: held to their end", spec: "bundles=com.a quiet-hours=22:00-08:00 cap=1/1h",
              now: "2026-06-01T19:45:00Z", windowEnd: "2026-06-03T00:00:00Z", userSends: ["2026-06-01T19:30:00Z"],
              expected: hold("2026-06-02T06:00:00Z", .quietHours)),
        .init(name: "cap hold lands in quiet hours ending past the window: frequency_cap",
              spec: "bundles=com.a quiet-hours=22:00-08:00 cap=1/1h", now: "2026-06-01T19:45:00Z",
              windowEnd: "2026-06-02T00:00:00Z", userSends: ["2026-06-01T19:30:00Z"], expected: .suppress(.frequencyCap)),
        .init(name: "quiet end then a cap: held for the cap", spec: "bundles=com.a quiet-hours=22:00-08:00 cap=1/1h",
              now: "2026-06-01T23:00:00Z", windowEnd: "2026-06-03T00:00:00Z", userSends: ["2026-06-02T05:30:00Z"],
              expected: hold("2026-06-02T06:30:00Z", .frequencyCap)),
        // Transactional: exempt from quiet hours and caps.
        .init(name: "transactional inside quiet hours and capped: send", spec: "bundles=com.a quiet-hours=22:00-08:00 cap=1/1d",
              now: "2026-06-01T21:00:00Z", windowEnd: "2026-06-01T21:30:00Z", transactional: true,
              userSends: ["2026-06-01T20:59:00Z"], expected: .send),
        // A fallback is due at window end: any hold suppresses it.
        .init(name: "fallback in quiet hours: suppressed", now: "2026-06-01T21:00:00Z", windowEnd: "2026-06-01T21:00:00Z",
              windowStart: "2026-06-01T09:00:00Z", localSendTime: "09:00", fallback: true, expected: .suppress(.quietHours)),
        .init(name: "fallback capped: suppressed", spec: "bundles=com.a cap=1/1h", now: "2026-06-01T12:00:00Z",
              windowEnd: "2026-06-01T12:00:00Z", windowStart: "2026-06-01T09:00:00Z", fallback: true,
              userSends: ["2026-06-01T11:30:00Z"], expected: .suppress(.frequencyCap)),
        .init(name: "fallback outside quiet hours, uncapped: send (its local send time does not apply)",
              spec: "bundles=com.a cap=1/1h", now: "2026-06-01T12:00:00Z", windowEnd: "2026-06-01T12:00:00Z",
              windowStart: "2026-06-01T09:00:00Z", localSendTime: "23:00", fallback: true, expected: .send),
        // Local send time.
        .init(name: "local send time later today: held", spec: nil, now: "2026-06-01T05:00:00Z",
              windowEnd: "2026-06-02T05:00:00Z", localSendTime: "09:00", expected: hold("2026-06-01T07:00:00Z", .localSendTime)),
        .init(name: "local send time 9 h west: held 9 h later", zone: "America/Los_Angeles", spec: nil, now: "2026-06-01T05:00:00Z",
              windowEnd: "2026-06-02T05:00:00Z", localSendTime: "09:00", expected: hold("2026-06-01T16:00:00Z", .localSendTime)),
        .init(name: "local send time reached: send", spec: nil, now: "2026-06-01T07:00:00Z",
              windowEnd: "2026-06-02T05:00:00Z", windowStart: "2026-06-01T05:00:00Z", localSendTime: "09:00", expected: .send),
        .init(name: "no local send time in the window: suppressed", spec: nil, now: "2026-06-01T08:00:00Z",
              windowEnd: "2026-06-01T10:00:00Z", localSendTime: "09:00", expected: .suppress(.localSendTime)),
        .init(name: "local send time in the spring-forward gap: the gap's end", zone: "America/New_York", spec: nil,
              now: "2026-03-08T05:00:00Z", windowEnd: "2026-03-09T00:00:00Z", localSendTime: "02:30",
              expected: hold("2026-03-08T07:00:00Z", .localSendTime)),
        .init(name: "local send time repeated at fall back: the first", zone: "America/New_York", spec: nil,
              now: "2026-11-01T04:00:00Z", windowEnd: "2026-11-02T00:00:00Z", localSendTime: "01:30",
              expected: hold("2026-11-01T05:30:00Z", .localSendTime)),
        .init(name: "local send time in Lord Howe's 30-minute gap", zone: "Australia/Lord_Howe", spec: nil,
              now: "2026-10-03T12:00:00Z", windowEnd: "2026-10-05T00:00:00Z", localSendTime: "02:15",
              expected: hold("2026-10-03T15:30:00Z", .localSendTime)),
        .init(name: "local send time on Apia's skipped day: the instant after the skip", zone: "Pacific/Apia", spec: nil,
              now: "2011-12-29T20:00:00Z", windowEnd: "2012-01-01T00:00:00Z", localSendTime: "09:00",
              expected: hold("2011-12-30T10:00:00Z", .localSendTime)),
        .init(name: "local send time inside quiet hours: held to their end", now: "2026-06-01T03:00:00Z",
              windowEnd: "2026-06-02T03:00:00Z", localSendTime: "07:00", expected: hold("2026-06-01T06:00:00Z", .quietHours)),
        .init(name: "transactional keeps its local send time", spec: "bundles=com.a quiet-hours=22:00-08:00",
              now: "2026-06-01T05:00:00Z", windowEnd: "2026-06-02T05:00:00Z", localSendTime: "23:00", transactional: true,
              expected: hold("2026-06-01T21:00:00Z", .localSendTime)),
    ]

    @Test(arguments: cases)
    func verdict(_ row: Case) throws {
        let rules = try row.spec.map { try PolicyRules.parse($0) { _ in nil } }
        let now = at(row.now)
        let push = PolicyPush(
            transactional: row.transactional, localSendTime: row.localSendTime.map { TimeOfDay(parsing: $0)! }, dueAt: now,
            windowStart: row.windowStart.map(at) ?? now, windowEnd: at(row.windowEnd), expiresAt: row.ttlEnd.map(at),
            isFallback: row.fallback)
        let caps = CapHistory(user: row.userSends.map(at), campaign: row.campaignSends.map(at))
        let verdict = Self.policy.verdict(rules: rules, zone: Zones.load(row.zone), push: push, caps: caps, now: now)
        #expect(verdict == row.expected)
    }

    // MARK: Schedule-time planning

    @Test func localSendInstantsTwoZonesNineHoursApart() {
        let start = at("2026-06-01T00:00:00Z"), end = start + day
        let nine = TimeOfDay(hour: 9, minute: 0)!
        let berlin = Self.policy.localSendInstant(zone: Zones.load("Europe/Berlin"), time: nine, windowStart: start, earliest: start + 30_000, windowEnd: end)
        let la = Self.policy.localSendInstant(zone: Zones.load("America/Los_Angeles"), time: nine, windowStart: start, earliest: start + 30_000, windowEnd: end)
        #expect(berlin == at("2026-06-01T07:00:00Z") && la == at("2026-06-01T16:00:00Z"))
        #expect(la! - berlin! == 9 * hour)
    }

    @Test func localSendInstantBounds() {
        let zone = ZoneRules.utc
        let nine = TimeOfDay(hour: 9, minute: 0)!
        let start = at("2026-06-01T00:00:00Z")
        // Not before window start + grace: 09:00 exactly at the earliest is kept, a ms later is the next day's.
        #expect(Self.policy.localSendInstant(zone: zone, time: nine, windowStart: start, earliest: start + 9 * hour, windowEnd: start + 2 * day) == start + 9 * hour)
        #expect(Self.policy.localSendInstant(zone: zone, time: nine, windowStart: start, earliest: start + 9 * hour + 1, windowEnd: start + 2 * day) == start + 33 * hour)
        // The window end is exclusive; an empty window has none.
        #expect(Self.policy.localSendInstant(zone: zone, time: nine, windowStart: start, earliest: start, windowEnd: start + 9 * hour) == nil)
        #expect(Self.policy.localSendInstant(zone: zone, time: nine, windowStart: start, earliest: start, windowEnd: start) == nil)
    }

    /// The earliest is fixed at Schedule: a device claimed again after
    /// another device's push keeps its own instant.
    @Test func aHeldDeviceKeepsItsInstantAcrossClaims() {
        let start = at("2026-06-01T00:00:00Z")
        let push = PolicyPush(
            localSendTime: TimeOfDay(hour: 9, minute: 0)!, dueAt: at("2026-06-01T07:00:00Z"), earliest: start,
            windowStart: start, windowEnd: start + day)
        let la = Zones.load("America/Los_Angeles")
        #expect(Self.policy.verdict(rules: nil, zone: la, push: push, caps: .none, now: at("2026-06-01T07:00:01Z"))
            == .hold(until: at("2026-06-01T16:00:00Z"), reason: .localSendTime))
        var released = push
        released.dueAt = at("2026-06-01T16:00:00Z")
        #expect(Self.policy.verdict(rules: nil, zone: la, push: released, caps: .none, now: at("2026-06-01T16:00:00.200Z")) == .send)
    }

    /// A policy reloaded while a push is held: the hold ends at the time
    /// planned under the old rules, and the push is decided again under
    /// the new ones (sent, held further, or suppressed).
    @Test func aPolicyReloadedWhileHeldDecidesAgainWhenTheHoldEnds() throws {
        let berlin = Zones.load("Europe/Berlin")
        let parse = { (spec: String) in try PolicyRules.parse(spec) { _ in nil } }
        let old = try parse("bundles=com.a quiet-hours=22:00-08:00")
        let now = at("2026-06-01T21:00:00Z"), end = at("2026-06-02T12:00:00Z")
        let push = PolicyPush(dueAt: now, windowStart: now, windowEnd: end)
        #expect(Self.policy.verdict(rules: old, zone: berlin, push: push, caps: .none, now: now)
            == .hold(until: at("2026-06-02T06:00:00Z"), reason: .quietHours))
        var released = push
        released.dueAt = at("2026-06-02T06:00:00Z")
        let sends = CapHistory(user: [at("2026-06-02T05:30:00Z")], campaign: [])
        // Reloaded: quiet hours gone → sent at once.
        #expect(Self.policy.verdict(rules: try parse("bundles=com.a"), zone: berlin, push: released, caps: sends, now: released.dueAt) == .send)
        // Reloaded: longer quiet hours → held to their new end.
        #expect(Self.policy.verdict(rules: try parse("bundles=com.a quiet-hours=22:00-09:00"), zone: berlin, push: released, caps: sends, now: released.dueAt)
            == .hold(until: at("2026-06-02T07:00:00Z"), reason: .quietHours))
        // Reloaded: a cap the user is at, and the window too short for it → suppressed.
        #expect(Self.policy.verdict(rules: try parse("bundles=com.a cap=1/12h"), zone: berlin, push: released, caps: sends, now: released.dueAt)
            == .suppress(.frequencyCap))
        // Reloaded: the bundle's policy removed → sent.
        #expect(Self.policy.verdict(rules: nil, zone: berlin, push: released, caps: sends, now: released.dueAt) == .send)
    }

    // MARK: Quiet periods for a hand-off

    @Test func quietPeriodsInsideAWindowAreClippedAndBounded() throws {
        let rules = try PolicyRules.parse("bundles=com.a quiet-hours=22:00-08:00") { _ in nil }
        let berlin = Zones.load("Europe/Berlin")
        let periods = Self.policy.quietPeriods(
            rules: rules, zone: berlin, from: at("2026-06-01T23:00:00Z"), to: at("2026-06-03T21:00:00Z"))
        #expect(periods.map(\.start) == [at("2026-06-01T23:00:00Z"), at("2026-06-02T20:00:00Z"), at("2026-06-03T20:00:00Z")])
        #expect(periods.map(\.end) == [at("2026-06-02T06:00:00Z"), at("2026-06-03T06:00:00Z"), at("2026-06-03T21:00:00Z")])
        let week = Self.policy.quietPeriods(rules: rules, zone: berlin, from: at("2026-01-01T00:00:00Z"), to: at("2026-03-01T00:00:00Z"))
        #expect(week.count == DeliveryPolicy.maximumQuietPeriods)
        #expect(Self.policy.quietPeriods(rules: nil, zone: berlin, from: 0, to: day).isEmpty)
        #expect(Self.policy.quietPeriods(rules: rules, zone: berlin, from: day, to: day).isEmpty)
    }

    @Test func aQuietPeriodInsideAGapDoesNotOccurThatDay() throws {
        // Lord Howe, 2026-10-04: 02:00 LHST jumps to 02:30 LHDT; 02:00-02:15 never shows.
        let rules = try PolicyRules.parse("bundles=com.a quiet-hours=02:00-02:15") { _ in nil }
        let zone = Zones.load("Australia/Lord_Howe")
        let periods = Self.policy.quietPeriods(rules: rules, zone: zone, from: at("2026-10-03T12:00:00Z"), to: at("2026-10-05T12:00:00Z"))
        // Only the next night's (02:00 LHDT = 15:00Z on the 4th).
        #expect(periods.map(\.start) == [at("2026-10-04T15:00:00Z")])
        #expect(periods.map(\.end) == [at("2026-10-04T15:15:00Z")])
    }

    // MARK: Caps arithmetic

    @Test func capsNeverAllowMoreThanNInAnyPeriod() {
        // Send whenever allowed, for a day of tries every 7 minutes: no rolling hour holds more than 3.
        let caps = [FrequencyCap(count: 3, periodMilliseconds: hour)!]
        var sends: [Int64] = []
        var t: Int64 = 0
        while t < day {
            let allowed = DeliveryPolicy.earliestAllowed(by: caps, sends: sends, atOrAfter: t)
            if allowed == t { sends.append(t) }
            t += 7 * minute
        }
        for (i, s) in sends.enumerated() {
            #expect(sends[i...].prefix { $0 < s + hour }.count <= 3)
        }
        #expect(sends.count >= 60)
    }
}
