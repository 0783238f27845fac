import HeraldPrimitives
import Testing
@testable import HeraldCore

@Suite("Delivery windows and planning")
struct DeliveryTests {
    static let t0 = Fixtures.now

    static let windows: [(String, UInt32?, String?, String?, String, String)] = [
        ("hours from now", 3, nil, nil, "2026-01-01T00:00:00Z", "2026-01-01T03:00:00Z"),
        ("hours from deliver_after", 2, nil, "2026-01-02T10:00:00+02:00", "2026-01-02T08:00:00Z", "2026-01-02T10:00:00Z"),
        ("target from now", nil, "2026-01-01T12:30:00.5+01:00", nil, "2026-01-01T00:00:00Z", "2026-01-01T11:30:00.5Z"),
        ("target and deliver_after", nil, "2026-01-03T00:00:00Z", "2026-01-02T00:00:00Z", "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"),
        ("168 hours", 168, nil, nil, "2026-01-01T00:00:00Z", "2026-01-08T00:00:00Z"),
    ]

    @Test("window resolution", arguments: windows)
    func window(name: String, hours: UInt32?, target: String?, after: String?, start: String, end: String) throws {
        let s = Fixtures.schedule(hours: hours, target: target, after: after)
        let v = try Validator.validate(s, now: Self.t0, generateIdempotencyKey: { "k" })
        #expect(RFC3339.format(v.window.start) == start)
        #expect(RFC3339.format(v.window.end) == end)
    }

    static let plans: [(String, DeliveryMethod, Int64, Int64, Int64?, APNsPushType, Int64, Int64?)] = [
        // name, method, start offset, end offset, grace (nil = default), first push, sendAt offset, fallback offset
        ("traditional now", .traditional, 0, 3600, nil, .alert, 30, nil),
        ("traditional later start", .traditional, 600, 3600, nil, .alert, 600, nil),
        ("traditional past start", .traditional, -600, 3600, nil, .alert, 30, nil),
        ("traditional no grace", .traditional, 0, 3600, 0, .alert, 0, nil),
        ("context-aware now", .contextAware, 0, 3600, nil, .background, 30, 3600),
        ("context-aware later", .contextAware, 7200, 10800, nil, .background, 7200, 10800),
        ("context-aware custom grace", .contextAware, 0, 3600, 120, .background, 120, 3600),
        ("context-aware window too short", .contextAware, 0, 20, nil, .alert, 30, nil),
    ]

    @Test("delivery plans", arguments: plans)
    func plan(name: String, method: DeliveryMethod, start: Int64, end: Int64, grace: Int64?, push: APNsPushType, sendAt: Int64, fallback: Int64?) {
        let w = DeliveryWindow(start: Self.t0.adding(seconds: start), end: Self.t0.adding(seconds: end))
        let p = grace.map { DeliveryPlanner.plan(method: method, window: w, now: Self.t0, graceSeconds: $0) }
            ?? DeliveryPlanner.plan(method: method, window: w, now: Self.t0)
        #expect(p.firstPush == push)
        #expect(p.sendAt == Self.t0.adding(seconds: sendAt))
        #expect(p.fallbackAt == fallback.map { Self.t0.adding(seconds: $0) })
    }

    @Test("schedule validation resolves method and plan")
    func scheduleResolves() throws {
        let v = try Validator.validate(Fixtures.schedule(method: .contextAware), now: Self.t0, generateIdempotencyKey: { "k" })
        #expect(v.method == .contextAware && !v.abTest)
        #expect(v.plan.firstPush == .background)
        #expect(v.plan.fallbackAt == v.window.end)
        let ab = try Validator.validate(Fixtures.schedule(method: nil), now: Self.t0, generateIdempotencyKey: { "k" })
        #expect(ab.abTest)
        #expect(ab.method == ABSplit.default.assign(bundleID: "com.example.app", userID: "user-1"))
    }
}

@Suite("A/B split")
struct ABSplitTests {
    static let golden: [(String, String, UInt64, UInt64, DeliveryMethod)] = [
        ("com.example.app", "user-1", 0x84f7_7935_9538_9562, 0x02e9_7651_6e3d_5666, .contextAware),
        ("com.example.app", "user-2", 0x84f7_7835_9538_93af, 0xca63_e75b_f179_c425, .traditional),
        ("com.example.app", "", 0x486f_cf1e_a192_03d3, 0xda1a_eb81_2289_2fd8, .traditional),
        ("", "", 0xaf63_c74c_8601_c8dd, 0x7a4c_822a_f49a_e566, .contextAware),
        ("com.herald.demo", "alice", 0xac80_6e89_b66f_6235, 0xbeb7_abd6_f342_330b, .traditional),
        ("com.herald.demo", "bob", 0x7281_8a16_a577_0fb2, 0x9ed3_6c69_5e46_9c45, .traditional),
        ("com.herald.demo", "zoë", 0xacf5_c539_6664_fc42, 0xe7b6_2548_d40c_a8c6, .traditional),
    ]

    @Test("golden hashes and cohorts", arguments: golden)
    func goldenValues(bundle: String, user: String, fnv: UInt64, hash: UInt64, method: DeliveryMethod) {
        #expect(ABSplit.fnv1a64(bundleID: bundle, userID: user) == fnv)
        #expect(ABSplit.hash(bundleID: bundle, userID: user) == hash)
        #expect(ABSplit.default.assign(bundleID: bundle, userID: user) == method)
    }

    @Test("distribution over 10,000 users", arguments: [(0.5, 4850...5150), (0.2, 1850...2150), (0.9, 8850...9150), (0.0, 0...0), (1.0, 10000...10000)])
    func distribution(share: Double, expected: ClosedRange<Int>) {
        let split = ABSplit(contextAwareShare: share)
        for app in ["com.example.app", "com.other.app"] {
            let n = (0..<10_000).count { split.assign(bundleID: app, userID: "user-\($0)") == .contextAware }
            #expect(expected.contains(n), "\(app): \(n)")
        }
    }

    @Test("a requested method is not an A/B assignment")
    func requested() {
        let r = ABSplit.default.resolve(requested: .traditional, bundleID: "a.b", userID: "u")
        #expect(r.method == .traditional && !r.abTest)
    }

    @Test("share is clamped", arguments: [(-1.0, 0.0), (2.0, 1.0), (Double.nan, 0.5), (0.3, 0.3)])
    func clamps(input: Double, expected: Double) {
        #expect(ABSplit(contextAwareShare: input).contextAwareShare == expected)
    }
}

@Suite("Locale resolution")
struct LocaleResolverTests {
    static let available = ["en", "de", "pt-BR", "zh-Hant-TW", "fr-CA"]

    static let cases: [(String?, String, LocaleResolver.Match)] = [
        ("en", "en", .exact),
        ("EN", "en", .exact),
        ("pt_br", "pt-BR", .exact),
        ("PT-br", "pt-BR", .exact),
        ("zh_hant_tw", "zh-Hant-TW", .exact),
        ("de-CH", "de", .language),
        ("de_AT", "de", .language),
        ("en-US", "en", .language),
        ("fr", "fr-CA", .sameLanguage),
        ("fr-FR", "fr-CA", .sameLanguage),
        ("pt-PT", "pt-BR", .sameLanguage),
        ("ja-JP", "en", .defaultLocale),
        ("es", "en", .defaultLocale),
        (nil, "en", .defaultLocale),
        ("", "en", .defaultLocale),
    ]

    @Test("fallback chain", arguments: cases)
    func resolves(requested: String?, expected: String, match: LocaleResolver.Match) throws {
        let r = try #require(LocaleResolver.resolve(requested: requested, available: Self.available, defaultLocale: "en"))
        #expect(r.locale == expected)
        #expect(r.match == match)
    }

    @Test("default locale matches case-insensitively")
    func defaultCase() {
        #expect(LocaleResolver.resolve(requested: "ja", available: ["en-US", "de"], defaultLocale: "en_us")?.locale == "en-US")
        #expect(LocaleResolver.resolve(requested: "ja", available: [String](), defaultLocale: "en") == nil)
    }

    static let tags: [(String, Bool)] = [
        ("en", true), ("en-US", true), ("zh_Hant_TW", true), ("x", true), ("", false), ("1en", false),
        ("en-", false), ("en--US", false), ("-en", false), ("e n", false), ("en.US", false), (String(repeating: "a", count: 36), false),
    ]

    @Test("locale tag shape", arguments: tags)
    func wellFormed(tag: String, ok: Bool) {
        #expect(LocaleResolver.isWellFormed(tag) == ok)
    }
}

@Suite("Message state machine")
struct StateMachineTests {
    static let allowed: Set<String> = [
        "scheduled>handed_off", "scheduled>sent", "scheduled>cancelled", "scheduled>superseded",
        "scheduled>failed", "scheduled>expired", "scheduled>no_devices",
        "handed_off>displayed", "handed_off>sent", "handed_off>cancelled", "handed_off>superseded",
        "handed_off>failed", "handed_off>expired", "handed_off>no_devices",
        "sent>displayed",
        // SPEC §4b (issue 26): every device's push withheld by the delivery policy.
        "scheduled>suppressed", "handed_off>suppressed",
    ]

    static let pairs: [(MessageState, MessageState)] = MessageState.allCases.flatMap { a in MessageState.allCases.map { (a, $0) } }

    @Test("every pair of states against the table", arguments: pairs)
    func transition(from: MessageState, to: MessageState) {
        let ok = Self.allowed.contains("\(from.rawValue)>\(to.rawValue)")
        var state = from
        if ok {
            #expect(throws: Never.self) { try state.transition(to: to) }
            #expect(state == to)
        } else {
            let error = #expect(throws: StateTransitionError.self) { try state.transition(to: to) }
            #expect(error == StateTransitionError(from: from, to: to))
            #expect(error?.isNoOp == (from == to))
            #expect(state == from)
        }
    }

    @Test("terminal states", arguments: MessageState.allCases)
    func terminal(state: MessageState) {
        let terminal: Set<MessageState> = [.displayed, .cancelled, .superseded, .failed, .expired, .noDevices, .suppressed]
        #expect(state.isTerminal == terminal.contains(state))
        #expect(state.isCancellable == (state == .scheduled || state == .handedOff))
        #expect(state.isReplaceable == state.isCancellable)
        #expect(state.isDelivered == (state == .sent || state == .displayed))
    }
}
