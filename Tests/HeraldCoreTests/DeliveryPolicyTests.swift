import HeraldPrimitives
import Testing
@testable import HeraldCore

/// Every delivery rule, one row each (``DeliveryPolicy``). Times are
/// milliseconds relative to `now`.
@Suite("Delivery policy")
struct DeliveryPolicyTests {
    static let now: Int64 = 1_767_225_600_000
    static let hour: Int64 = 3_600_000
    static let policy = DeliveryPolicy()

    struct Record: DeliveryRecord {
        var deviceToken: String
        var kind: DeviceOutcomeKind
        var reason: String?
        var at: Int64 = DeliveryPolicyTests.now
    }

    struct Phone: DeliveryDevice {
        var deviceToken: String
        var platform: Platform = .ios
    }

    struct Undecodable: Error, CustomStringConvertible {
        var description: String { "truncated protobuf" }
    }

    static func facts(
        _ state: MessageState = .scheduled, _ method: DeliveryMethod = .traditional, platform: Platform = .ios,
        due: Int64 = 0, windowEnd: Int64 = hour
    ) -> DeliveryFacts {
        DeliveryFacts(state: state, method: method, platform: platform, windowEnd: now + windowEnd, dueAt: now + due)
    }

    static func request(ttl: UInt32? = nil, platform: Platform = .ios, enabled: Bool = true) -> Result<PushMessage, any Error> {
        let override: JSONObject? = enabled ? nil : ["enabled": false]
        return .success(PushMessage(
            bundleID: "com.example.app", platform: platform, content: Fixtures.content(),
            ttl: ttl.map(TimeToLive.init(rawValue:)) ?? .default,
            ios: platform == .ios ? override : nil, android: platform == .android ? override : nil, idempotencyKey: "k"))
    }

    // MARK: The message's decision

    /// What a decision should be: a send (push, deadline offset, one
    /// attempt), a finish (push, state, error), or none.
    enum Expected: Sendable, CustomStringConvertible {
        case send(DeliveryPush, deadline: Int64, singleAttempt: Bool)
        case finish(DeliveryPush, MessageState, String)
        case none

        var description: String {
            switch self {
            case .send(let push, let deadline, let single): "send \(push) by +\(deadline) ms\(single ? ", once" : "")"
            case .finish(let push, let state, _): "finish \(push) \(state)"
            case .none: "none"
            }
        }
    }

    static let ttlExpired = "TTL ran out before the push could be sent"

    static let decisions: [(String, DeliveryFacts, UInt32?, Expected)] = [
        ("traditional, due now", facts(), 3600, .send(.alert, deadline: hour, singleAttempt: false)),
        ("default TTL (4 weeks)", facts(), nil, .send(.alert, deadline: 2_419_200_000, singleAttempt: false)),
        ("TTL 0: one attempt, 10 s to make it", facts(), 0, .send(.alert, deadline: 10_000, singleAttempt: true)),
        ("TTL 5 s: retries for the minimum 10 s", facts(), 5, .send(.alert, deadline: 10_000, singleAttempt: false)),
        ("TTL 0, late by exactly the 60 s slack", facts(due: -60_000), 0, .send(.alert, deadline: 10_000, singleAttempt: true)),
        ("TTL 0, late by the slack and 1 ms", facts(due: -60_001), 0, .finish(.alert, .expired, ttlExpired)),
        ("TTL 30 s, 45 s late: within the slack", facts(due: -45_000), 30, .send(.alert, deadline: 30_000, singleAttempt: false)),
        ("TTL 120 s, late by exactly the TTL", facts(due: -120_000), 120, .send(.alert, deadline: 120_000, singleAttempt: false)),
        ("TTL 120 s, expired by 1 ms", facts(due: -120_001), 120, .finish(.alert, .expired, ttlExpired)),
        ("hand-off: retries until the window ends", facts(.scheduled, .contextAware), nil,
         .send(.handoff, deadline: hour, singleAttempt: false)),
        ("hand-off: TTL ends before the window", facts(.scheduled, .contextAware), 60,
         .send(.handoff, deadline: 60_000, singleAttempt: false)),
        ("hand-off with 2 s of window left: the minimum 10 s", facts(.scheduled, .contextAware, windowEnd: 2_000), nil,
         .send(.handoff, deadline: 10_000, singleAttempt: false)),
        ("hand-off with no time left: degraded to an alert", facts(.scheduled, .contextAware, due: hour, windowEnd: hour), nil,
         .send(.alert, deadline: 2_419_200_000, singleAttempt: false)),
        ("window already over, context-aware: alert", facts(.scheduled, .contextAware, due: 0, windowEnd: -1), 3600,
         .send(.alert, deadline: hour, singleAttempt: false)),
        ("window already over, traditional: sent within its TTL", facts(due: -1_000, windowEnd: -1_000), 3600,
         .send(.alert, deadline: hour, singleAttempt: false)),
        ("fallback at window end (HANDED_OFF)", facts(.handedOff, .contextAware, due: 0, windowEnd: 0), 3600,
         .send(.alert, deadline: hour, singleAttempt: false)),
        ("fallback past its TTL", facts(.handedOff, .contextAware, due: -2 * hour, windowEnd: -2 * hour), 3600,
         .finish(.alert, .expired, ttlExpired)),
        ("SENT has no push", facts(.sent), nil, .none),
        ("CANCELLED has no push", facts(.cancelled), nil, .none),
        ("DISPLAYED has no push", facts(.displayed, .contextAware), nil, .none),
    ]

    @Test("the message's decision", arguments: decisions)
    func decision(name: String, message: DeliveryFacts, ttl: UInt32?, expected: Expected) {
        let decision = Self.policy.decide(message, request: Self.request(ttl: ttl), history: [Record](), now: Self.now)
        switch (decision, expected) {
        case (.send(let plan)?, .send(let push, let deadline, let single)):
            #expect(plan.push == push)
            #expect(plan.deadline == Self.now + deadline)
            #expect(plan.singleAttempt == single)
            #expect(plan.platformEnabled && plan.finished.isEmpty)
        case (.finish(let push, let otherwise)?, .finish(let wantedPush, let state, let error)):
            #expect(push == wantedPush && otherwise.state == state && otherwise.error == error)
        case (nil, .none):
            #expect(Self.policy.push(for: message) == nil)
        default:
            Issue.record("\(name): got \(String(describing: decision)), wanted \(expected)")
        }
    }

    @Test func aStoredRequestThatDoesNotDecodeFailsTheMessage() {
        let decision = Self.policy.decide(Self.facts(), request: .failure(Undecodable()), history: [Record](), now: Self.now)
        guard case .finish(.alert, let otherwise)? = decision else {
            Issue.record("got \(String(describing: decision))")
            return
        }
        #expect(otherwise == MessageEnd(.failed, error: "stored request does not decode: truncated protobuf"))
    }

    @Test func aDisabledPlatformIsReadFromTheMessagesOwnOverride() {
        for platform in Platform.allCases {
            for enabled in [true, false] {
                let decision = Self.policy.decide(
                    Self.facts(platform: platform), request: Self.request(platform: platform, enabled: enabled),
                    history: [Record](), now: Self.now)
                guard case .send(let plan)? = decision else {
                    Issue.record("\(platform): got \(String(describing: decision))")
                    continue
                }
                #expect(plan.platformEnabled == enabled)
            }
        }
    }

    @Test func aWaitingDeviceIsNotFinishedSoItIsSentWhenDueAgain() {
        // Held (WAITING) at `now`, then due again: the history of the push
        // that began at `now` keeps the SENT device and drops the WAITING one.
        let outcomes = [
            Record(deviceToken: "old", kind: .sent, at: Self.now - 1),
            Record(deviceToken: "a", kind: .sent), Record(deviceToken: "b", kind: .waiting, reason: "quiet_hours"),
        ]
        let history = Self.policy.history(outcomes, pushStart: Self.now)
        #expect(history.map(\.deviceToken) == ["a"])
        // Even when handed a WAITING record, decide does not count it finished.
        guard case .send(let plan)? = Self.policy.decide(Self.facts(), request: Self.request(), history: outcomes.dropFirst(),
                                                         now: Self.now) else {
            Issue.record("not a send")
            return
        }
        #expect(plan.finished == ["a"])
        #expect(Self.policy.action(for: Phone(deviceToken: "b"), in: plan) == .send)
        #expect(Self.policy.action(for: Phone(deviceToken: "a"), in: plan) == .skip)
    }

    @Test func theOutcomeKindsOfThePolicy() {
        #expect(!DeviceOutcomeKind.waiting.isFinal && !DeviceOutcomeKind.waiting.reachedDevice)
        #expect(DeviceOutcomeKind.suppressed.isFinal && !DeviceOutcomeKind.suppressed.reachedDevice)
        #expect(!DeviceOutcomeKind.suppressed.dropsDevice && !DeviceOutcomeKind.waiting.dropsDevice)
        #expect(DeviceOutcomeKind.allKnown.contains(.waiting) && DeviceOutcomeKind.allKnown.contains(.suppressed))
        #expect(MessageState.suppressed.isTerminal && !MessageState.suppressed.isDelivered)
        #expect(MessageState.scheduled.canTransition(to: .suppressed) && MessageState.handedOff.canTransition(to: .suppressed))
        #expect(!MessageState.sent.canTransition(to: .suppressed) && !MessageState.suppressed.isCancellable)
        #expect(!MessageState.suppressed.isReplaceable)
    }

    @Test func theHistoryNamesTheDevicesFinishedForThisPush() {
        let history = [Record(deviceToken: "a", kind: .sent), Record(deviceToken: "b", kind: .failed, reason: "x")]
        guard case .send(let plan)? = Self.policy.decide(Self.facts(), request: Self.request(), history: history, now: Self.now) else {
            Issue.record("not a send")
            return
        }
        #expect(plan.finished == ["a", "b"])
    }

    // MARK: Each device's action

    static let disabledIOS = "render: ios delivery is disabled by the ios override (enabled: false)"
    static let disabledAndroid = "render: android delivery is disabled by the android override (enabled: false)"

    static let actions: [(String, Set<String>, Bool, Phone, DeviceAction)] = [
        ("a device not yet sent this push", [], true, Phone(deviceToken: "a"), .send),
        ("a device with another finished beside it", ["b"], true, Phone(deviceToken: "a"), .send),
        ("a device finished for this push: never resent", ["a"], true, Phone(deviceToken: "a"), .skip),
        ("iOS disabled by {\"enabled\": false}", [], false, Phone(deviceToken: "a"), .finish(.failed, reason: disabledIOS)),
        ("Android disabled by {\"enabled\": false}", [], false, Phone(deviceToken: "a", platform: .android),
         .finish(.failed, reason: disabledAndroid)),
        ("finished and disabled: skipped, not failed again", ["a"], false, Phone(deviceToken: "a"), .skip),
    ]

    @Test("each device's action", arguments: actions)
    func action(name: String, finished: Set<String>, enabled: Bool, device: Phone, expected: DeviceAction) {
        let plan = PushPlan(push: .alert, deadline: Self.now, singleAttempt: false, platformEnabled: enabled, finished: finished)
        #expect(Self.policy.action(for: device, in: plan) == expected)
    }

    // MARK: How a push ends

    static let noDevices = MessageEnd(.noDevices, error: "none")

    static let ends: [(String, DeliveryPush, [Record], MessageEnd)] = [
        ("alert sent to one device", .alert, [Record(deviceToken: "a", kind: .sent)], MessageEnd(.sent)),
        ("hand-off accepted: fallback due at window end", .handoff, [Record(deviceToken: "a", kind: .handedOff)],
         MessageEnd(.handedOff, dueAt: now + hour)),
        ("unconfirmed counts as reached", .alert, [Record(deviceToken: "a", kind: .unconfirmed)], MessageEnd(.sent)),
        ("unconfirmed hand-off counts as reached", .handoff, [Record(deviceToken: "a", kind: .unconfirmed)],
         MessageEnd(.handedOff, dueAt: now + hour)),
        ("mixed: one sent, one failed, one expired → SENT", .alert, [
            Record(deviceToken: "a", kind: .failed, reason: "no APNs route"), Record(deviceToken: "b", kind: .sent),
            Record(deviceToken: "c", kind: .expired),
        ], MessageEnd(.sent)),
        ("expired only → EXPIRED", .alert, [Record(deviceToken: "a", kind: .expired), Record(deviceToken: "b", kind: .expired)],
         MessageEnd(.expired, error: "TTL ran out before the provider accepted the push")),
        ("expired hand-off → EXPIRED", .handoff, [Record(deviceToken: "a", kind: .expired)],
         MessageEnd(.expired, error: "TTL ran out before the provider accepted the push")),
        ("expired and refused → FAILED with each reason", .alert, [
            Record(deviceToken: "aaaaaaaaaaaa", kind: .expired),
            Record(deviceToken: "bbbbbbbbbbbb", kind: .unregistered, reason: "Unregistered"),
        ], MessageEnd(.failed, error: "aaaaaaaa…: expired; bbbbbbbb…: Unregistered")),
        ("failed hand-off → FAILED", .handoff, [Record(deviceToken: "a", kind: .rejected, reason: "BadTopic")],
         MessageEnd(.failed, error: "a…: BadTopic")),
        ("no outcome at all → otherwise", .alert, [], noDevices),
        // SPEC §4b (issue 26): the delivery policy's outcomes.
        ("every device SUPPRESSED → SUPPRESSED with each reason", .alert, [
            Record(deviceToken: "aaaaaaaaaaaa", kind: .suppressed, reason: "quiet_hours"),
            Record(deviceToken: "bbbbbbbbbbbb", kind: .suppressed, reason: "frequency_cap"),
        ], MessageEnd(.suppressed, error: "withheld by the delivery policy: aaaaaaaa…: quiet_hours; bbbbbbbb…: frequency_cap")),
        ("SUPPRESSED beside SENT → SENT", .alert, [
            Record(deviceToken: "a", kind: .suppressed, reason: "local_time"), Record(deviceToken: "b", kind: .sent),
        ], MessageEnd(.sent)),
        ("SUPPRESSED fallback of a hand-off → SUPPRESSED", .handoff, [Record(deviceToken: "a", kind: .suppressed, reason: "quiet_hours")],
         MessageEnd(.suppressed, error: "withheld by the delivery policy: a…: quiet_hours")),
        ("SUPPRESSED beside FAILED → FAILED with each reason", .alert, [
            Record(deviceToken: "a", kind: .suppressed, reason: "quiet_hours"), Record(deviceToken: "b", kind: .rejected, reason: "BadTopic"),
        ], MessageEnd(.failed, error: "a…: quiet_hours; b…: BadTopic")),
        ("WAITING is not final: left out (SUPPRESSED beside it → SUPPRESSED)", .alert, [
            Record(deviceToken: "a", kind: .waiting, reason: "quiet_hours"), Record(deviceToken: "b", kind: .suppressed, reason: "local_time"),
        ], MessageEnd(.suppressed, error: "withheld by the delivery policy: b…: local_time")),
        ("only WAITING records → otherwise", .alert, [Record(deviceToken: "a", kind: .waiting, reason: "throttle")], noDevices),
    ]

    @Test("how a push ends", arguments: ends)
    func end(name: String, push: DeliveryPush, records: [Record], expected: MessageEnd) {
        #expect(Self.policy.end(of: push, for: Self.facts(), records: records, otherwise: Self.noDevices) == expected)
    }

    // MARK: Whole pushes (decide, each device, end)

    /// A push carried out as the dispatcher does: `results` answers each
    /// device sent to; nil when the message is not sent now.
    static func carryOut(
        _ message: DeliveryFacts, request: Result<PushMessage, any Error>, history: [Record], devices: [Phone],
        results: [String: DeviceOutcomeKind], now: Int64 = now
    ) -> (sent: [String], end: MessageEnd)? {
        switch policy.decide(message, request: request, history: history, now: now) {
        case .finish(let push, let otherwise)?:
            return ([], policy.end(of: push, for: message, records: history, otherwise: otherwise))
        case .send(let plan)?:
            var sent: [String] = []
            var recorded: [Record] = []
            for device in devices {
                switch policy.action(for: device, in: plan) {
                case .send:
                    sent.append(device.deviceToken)
                    recorded.append(Record(deviceToken: device.deviceToken, kind: results[device.deviceToken] ?? .sent))
                case .finish(let kind, let reason): recorded.append(Record(deviceToken: device.deviceToken, kind: kind, reason: reason))
                case .skip, .defer: break
                }
            }
            let otherwise = policy.noDevices(message, bundleID: "com.example.app")
            return (sent, policy.end(of: plan.push, for: message, records: history + recorded, otherwise: otherwise))
        case .defer?, nil:
            return nil
        }
    }

    static let a = Phone(deviceToken: "aaaaaaaaaa")
    static let b = Phone(deviceToken: "bbbbbbbbbb")
    static let noIOSDevice = "no registered iOS device for this user in com.example.app when the push was due"

    static let pushes: [(String, DeliveryFacts, Bool, [Record], [Phone], [String: DeviceOutcomeKind], [String], MessageEnd)] = [
        ("no devices → NO_DEVICES", facts(), true, [], [], [:], [], MessageEnd(.noDevices, error: noIOSDevice)),
        ("no Android device → NO_DEVICES", facts(platform: .android), true, [], [], [:], [],
         MessageEnd(.noDevices, error: "no registered Android device for this user in com.example.app when the push was due")),
        ("two devices, both sent", facts(), true, [], [a, b], [:], [a.deviceToken, b.deviceToken], MessageEnd(.sent)),
        ("resumed push: the finished device is not resent", facts(), true,
         [Record(deviceToken: a.deviceToken, kind: .unconfirmed)], [a, b], [b.deviceToken: .failed], [b.deviceToken], MessageEnd(.sent)),
        ("resumed push, every device finished: ends from its history", facts(), true,
         [Record(deviceToken: a.deviceToken, kind: .sent), Record(deviceToken: b.deviceToken, kind: .failed, reason: "x")],
         [a, b], [:], [], MessageEnd(.sent)),
        ("resumed push, every device finished unreached → FAILED", facts(), true,
         [Record(deviceToken: a.deviceToken, kind: .failed, reason: "no APNs route")], [a], [:], [],
         MessageEnd(.failed, error: "aaaaaaaa…: no APNs route")),
        ("resumed push whose TTL ran out meanwhile: its reached device makes it SENT", facts(due: -2 * hour), true,
         [Record(deviceToken: a.deviceToken, kind: .sent)], [a, b], [:], [], MessageEnd(.sent)),
        ("platform disabled: every device FAILED unsent", facts(), false, [], [a, b], [:], [],
         MessageEnd(.failed, error: "aaaaaaaa…: \(disabledIOS); bbbbbbbb…: \(disabledIOS)")),
        ("resumed hand-off, the rest expire → HANDED_OFF", facts(.scheduled, .contextAware), true,
         [Record(deviceToken: a.deviceToken, kind: .handedOff)], [a, b], [b.deviceToken: .expired], [b.deviceToken],
         MessageEnd(.handedOff, dueAt: now + hour)),
    ]

    @Test("whole pushes", arguments: pushes)
    func push(
        name: String, message: DeliveryFacts, enabled: Bool, history: [Record], devices: [Phone],
        results: [String: DeviceOutcomeKind], sent: [String], expected: MessageEnd
    ) {
        let done = Self.carryOut(message, request: Self.request(ttl: 3600, platform: message.platform, enabled: enabled),
                                 history: history, devices: devices, results: results)
        #expect(done?.sent == sent)
        #expect(done?.end == expected)
    }

    // MARK: After a hand-off, and revokes

    @Test func aHandOffIsFollowedByTheFallbackAtWindowEndUnlessDisplayed() {
        #expect(Self.policy.afterHandoff(of: Self.facts(.scheduled, .contextAware), displayed: false) == .fallback(at: Self.now + Self.hour))
        #expect(Self.policy.afterHandoff(of: Self.facts(.scheduled, .contextAware), displayed: true) == .displayed)
    }

    static let displayReports: [(MessageState, MessageState?, Bool)] = [
        (.handedOff, .displayed, true), (.sent, .displayed, false), (.scheduled, nil, false), (.displayed, nil, false),
        (.cancelled, nil, false), (.failed, nil, false), (.expired, nil, false), (.noDevices, nil, false), (.superseded, nil, false),
    ]

    @Test("the app's DISPLAYED report", arguments: displayReports)
    func displayed(state: MessageState, next: MessageState?, dropsFallback: Bool) {
        let report = Self.policy.displayed(in: state)
        #expect(report?.to == next)
        #expect((report?.dropsFallback ?? false) == dropsFallback)
    }

    static let revokes: [(String, Int64, Int64)] = [
        ("window open: retried until it ends", hour, hour),
        ("window ending in 2 s: the minimum 10 s", 2_000, 10_000),
        ("window over: the minimum 10 s", -hour, 10_000),
    ]

    @Test("revoke deadlines", arguments: revokes)
    func revoke(name: String, windowEnd: Int64, deadline: Int64) {
        let plan = Self.policy.revoke(windowEnd: Self.now + windowEnd, now: Self.now)
        #expect(plan == RevokePlan(deadline: Self.now + deadline, expiresAt: Self.now + windowEnd))
    }

    static let revokeRecords: [(DeviceOutcomeKind, String?, Bool, DeviceOutcomeKind, String?)] = [
        (.revoked, nil, true, .revoked, nil),
        (.unregistered, "Unregistered", false, .revokeFailed, "unregistered: Unregistered"),
        (.expired, nil, false, .revokeFailed, "expired"),
        (.failed, "no APNs route", false, .revokeFailed, "failed: no APNs route"),
    ]

    @Test("revoke records never read as delivery outcomes", arguments: revokeRecords)
    func revokeRecord(kind: DeviceOutcomeKind, reason: String?, accepted: Bool, recorded: DeviceOutcomeKind, recordedReason: String?) {
        let record = Self.policy.revokeRecord(kind: kind, reason: reason, accepted: accepted)
        #expect(record.kind == recorded && record.reason == recordedReason)
    }

    // MARK: Schedule time

    static let plans: [(String, DeliveryMethod, Int64, Int64, APNsPushType, Int64, Int64?)] = [
        // name, method, window start, window end (seconds from now), first push, send at, fallback
        ("hand-off exactly at window end: degraded", .contextAware, 0, 30, .alert, 30, nil),
        ("hand-off 1 s before window end", .contextAware, 0, 31, .background, 30, 31),
        ("window already over: an alert after the grace", .contextAware, -7200, -3600, .alert, 30, nil),
        ("traditional: never before the grace", .traditional, -60, 3600, .alert, 30, nil),
    ]

    @Test("schedule-time plans", arguments: plans)
    func plan(name: String, method: DeliveryMethod, start: Int64, end: Int64, push: APNsPushType, sendAt: Int64, fallback: Int64?) {
        let t0 = Timestamp(milliseconds: Self.now)
        let window = DeliveryWindow(start: t0.adding(seconds: start), end: t0.adding(seconds: end))
        let plan = DeliveryPolicy.plan(method: method, window: window, now: t0)
        #expect(plan == DeliveryPlan(firstPush: push, sendAt: t0.adding(seconds: sendAt), fallbackAt: fallback.map { t0.adding(seconds: $0) }))
    }
}
