import Testing
@testable import HeraldCore

struct ViolationCase: Sendable, CustomTestStringConvertible {
    var name: String
    var field: String
    var reason: String
    var input: @Sendable () -> ScheduleInput
    var testDescription: String { name }

    init(_ name: String, _ field: String, _ reason: String, _ input: @escaping @Sendable () -> ScheduleInput) {
        self.name = name
        self.field = field
        self.reason = reason
        self.input = input
    }
}

private func with(_ change: (inout ScheduleInput) -> Void) -> ScheduleInput {
    var s = Fixtures.schedule()
    change(&s)
    return s
}

private func contentWith(_ change: (inout NotificationContent) -> Void) -> ScheduleInput {
    with { s in
        var c = s.message.content!
        change(&c)
        s.message.content = c
    }
}

@Suite("Validation")
struct ValidatorTests {
    static let cases: [ViolationCase] = [
        .init("bundle id missing", "bundle_id", "required", { with { $0.message.bundleID = "" } }),
        .init("bundle id one label", "bundle_id", "at least two labels", { with { $0.message.bundleID = "app" } }),
        .init("bundle id empty label", "bundle_id", "empty label", { with { $0.message.bundleID = "com..app" } }),
        .init("bundle id trailing dot", "bundle_id", "empty label", { with { $0.message.bundleID = "com.app." } }),
        .init("bundle id bad char", "bundle_id", "only letters", { with { $0.message.bundleID = "com.ex ample.app" } }),
        .init("bundle id too long", "bundle_id", "at most 255 bytes", { with { $0.message.bundleID = "com." + String(repeating: "a", count: 260) } }),
        .init("platform missing", "platform", "required", { with { $0.message.platform = nil } }),
        .init("user id missing", "user_id", "required", { with { $0.userID = "" } }),
        .init("user id 257 bytes", "user_id", "at most 256 bytes, got 257", { with { $0.userID = String(repeating: "u", count: 257) } }),
        .init("user id multi-byte over", "user_id", "at most 256 bytes, got 258", { with { $0.userID = String(repeating: "é", count: 129) } }),
        .init("campaign missing", "campaign_id", "required", { with { $0.campaignID = "" } }),
        .init("campaign 129 bytes", "campaign_id", "at most 128 bytes, got 129", { with { $0.campaignID = String(repeating: "c", count: 129) } }),
        .init("key 129 bytes", "idempotency_key", "at most 128 bytes, got 129", { with { $0.message.idempotencyKey = String(repeating: "k", count: 129) } }),
        .init("collapse id 65 bytes", "collapse_id", "at most 64 bytes, got 65", { with { $0.message.collapseID = String(repeating: "c", count: 65) } }),
        .init("collapse id with a line feed", "collapse_id", "control characters (found 0xA)", { with { $0.message.collapseID = "a\nb" } }),
        .init("collapse id with CR", "collapse_id", "control characters (found 0xD)", { with { $0.message.collapseID = "a\rapns-id: x" } }),
        .init("collapse id with a tab", "collapse_id", "control characters (found 0x9)", { with { $0.message.collapseID = "a\tb" } }),
        .init("collapse id with DEL", "collapse_id", "control characters (found 0x7F)", { with { $0.message.collapseID = "a\u{7F}" } }),
        .init("collapse id with a leading space", "collapse_id", "begin or end with a space", { with { $0.message.collapseID = " a" } }),
        .init("ttl above max", "ttl_seconds", "at most 2419200", { with { $0.message.ttlSeconds = 2_419_201 } }),
        .init("content missing", "content", "required", { with { $0.message.content = nil } }),
        .init("title missing", "content.title", "required", { contentWith { $0.title = nil } }),
        .init("title empty", "content.title", "required", { contentWith { $0.title = .text("") } }),
        .init("body missing", "content.body", "required", { contentWith { $0.body = nil } }),
        .init("empty translations", "content.title.translations", "at least one locale", { contentWith { $0.title = .translations([:]); $0.body = .text("b") } }),
        .init("empty translated text", "content.title.translations[en]", "empty text", { contentWith { $0.title = .translations(["en": ""]); $0.defaultLocale = "en" } }),
        .init("bad locale tag", "content.title.translations[e n]", "not a locale tag", { contentWith { $0.title = .translations(["e n": "x"]); $0.body = .translations(["e n": "y"]); $0.defaultLocale = "e n" } }),
        .init("duplicate locale tags", "content.title.translations", "are the same tag", { contentWith { $0.title = .translations(["en-US": "a", "en_us": "b"]); $0.body = .translations(["en-US": "a", "en_us": "b"]); $0.defaultLocale = "en-US" } }),
        .init("locale sets differ", "content.body", "translations name {en} but content.title names {de,en}", {
            contentWith { $0.title = .translations(["en": "Hi", "de": "Hallo"]); $0.body = .translations(["en": "Body"]); $0.defaultLocale = "en" }
        }),
        .init("subtitle locale set differs", "content.subtitle", "translations name {fr} but content.title names {en}", {
            contentWith { $0.title = .translations(["en": "Hi"]); $0.subtitle = .translations(["fr": "Salut"]); $0.body = .text("b"); $0.defaultLocale = "en" }
        }),
        .init("default locale missing", "content.default_locale", "required when a field is translated", {
            contentWith { $0.title = .translations(["en": "Hi"]) }
        }),
        .init("default locale not translated", "content.default_locale", "\"fr\" is not one of the translated locales {de,en}", {
            contentWith { $0.title = .translations(["en": "Hi", "de": "Hallo"]); $0.defaultLocale = "fr" }
        }),
        .init("default locale malformed", "content.default_locale", "not a locale tag", { contentWith { $0.defaultLocale = "??" } }),
        .init("negative badge", "content.badge", "must be ≥ 0", { contentWith { $0.badge = -1 } }),
        .init("http image", "content.image_url", "https", { contentWith { $0.imageURL = "http://cdn.example.com/a.jpg" } }),
        .init("image without host", "content.image_url", "host", { contentWith { $0.imageURL = "https:///a.jpg" } }),
        .init("image with space", "content.image_url", "spaces", { contentWith { $0.imageURL = "https://cdn.example.com/a b.jpg" } }),
        .init("user_info aps", "content.user_info.aps", "reserved", { contentWith { $0.userInfo = ["aps": ["badge": 1]] } }),
        .init("user_info ctx_", "content.user_info.ctx_window_end", "reserved", { contentWith { $0.userInfo = ["ctx_window_end": "x"] } }),
        .init("user_info NaN", "content.user_info.a[0]", "NaN", { contentWith { $0.userInfo = ["a": [.number(.nan)]] } }),
        .init("ios enabled not bool", "ios.enabled", "boolean", { with { $0.message.ios = ["enabled": "no"] } }),
        .init("ios ctx_ key", "ios.ctx_idempotency_key", "reserved", { with { $0.message.ios = ["ctx_idempotency_key": "x"] } }),
        .init("ios aps not object", "ios.aps", "object", { with { $0.message.ios = ["aps": 1] } }),
        .init("android infinity", "android.x", "NaN", { with { $0.message.android = ["x": .number(.infinity)] } }),
        .init("no window", "deliver_within_hours", "one of deliver_within_hours and target_delivery_time is required", { with { $0.deliverWithinHours = nil } }),
        .init("both window forms", "target_delivery_time", "not both", { with { $0.targetDeliveryTime = "2026-01-01T05:00:00Z" } }),
        .init("hours 0", "deliver_within_hours", "1 to 168, got 0", { with { $0.deliverWithinHours = 0 } }),
        .init("hours 169", "deliver_within_hours", "1 to 168, got 169", { with { $0.deliverWithinHours = 169 } }),
        .init("target unparseable", "target_delivery_time", "RFC 3339", { with { $0.deliverWithinHours = nil; $0.targetDeliveryTime = "tomorrow" } }),
        .init("target in past", "target_delivery_time", "in the future", { with { $0.deliverWithinHours = nil; $0.targetDeliveryTime = "2025-12-31T23:00:00Z" } }),
        .init("target is now", "target_delivery_time", "in the future", { with { $0.deliverWithinHours = nil; $0.targetDeliveryTime = "2026-01-01T00:00:00Z" } }),
        .init("target beyond 168 h", "target_delivery_time", "at most 168 h", { with { $0.deliverWithinHours = nil; $0.targetDeliveryTime = "2026-01-08T00:00:01Z" } }),
        .init("deliver_after unparseable", "deliver_after", "RFC 3339", { with { $0.deliverAfter = "2026-01-01" } }),
        .init("deliver_after beyond 168 h", "deliver_after", "at most 168 h", { with { $0.deliverAfter = "2026-01-09T00:00:00Z" } }),
        .init("deliver_after after target", "deliver_after", "before target_delivery_time", {
            with { $0.deliverWithinHours = nil; $0.targetDeliveryTime = "2026-01-01T05:00:00Z"; $0.deliverAfter = "2026-01-01T06:00:00+00:00" }
        }),
        .init("deliver_after equals target", "deliver_after", "before target_delivery_time", {
            with { $0.deliverWithinHours = nil; $0.targetDeliveryTime = "2026-01-01T05:00:00Z"; $0.deliverAfter = "2026-01-01T07:00:00+02:00" }
        }),
        .init("payload over 4096", "content", "APNs payload is 5", { contentWith { $0.body = .text(String(repeating: "x", count: 5000)) } }),
        .init("payload over 4096 in one locale", "content", "for locale de is", {
            contentWith {
                $0.title = .translations(["en": "Hi", "de": "Hallo"])
                $0.body = .translations(["en": "short", "de": String(repeating: "ü", count: 2100)])
                $0.defaultLocale = "en"
            }
        }),
    ]

    @Test("each rule is reported with its field path", arguments: cases)
    func violation(_ c: ViolationCase) {
        do {
            _ = try Validator.validate(c.input(), now: Fixtures.now, generateIdempotencyKey: { "gen" })
            Issue.record("expected a violation of \(c.field)")
        } catch {
            let match = error.violations.contains { $0.field == c.field && $0.reason.contains(c.reason) }
            #expect(match, "got \(error.violations)")
        }
    }

    @Test("all problems are reported at once")
    func collectsAll() throws {
        var s = Fixtures.schedule(userID: "", campaignID: "", hours: 0)
        s.message.bundleID = "x"
        s.message.platform = nil
        s.message.collapseID = String(repeating: "c", count: 65)
        s.message.content = Fixtures.content(title: .translations(["en": "a", "de": "b"]), body: .translations(["en": "c"]))
        let error = try #require(throws: ValidationError.self) {
            try Validator.validate(s, now: Fixtures.now, generateIdempotencyKey: { "gen" })
        }
        #expect(error.violations.map(\.field) == [
            "bundle_id", "platform", "collapse_id", "content.body", "content.default_locale",
            "user_id", "campaign_id", "deliver_within_hours",
        ])
        #expect(error.description.contains("content.body: translations name {en} but content.title names {de,en}"))
    }

    static let validCases: [(String, @Sendable () -> ScheduleInput)] = [
        ("minimal", { Fixtures.schedule() }),
        ("rich translated", { Fixtures.schedule(Fixtures.rich()) }),
        ("locale keys differ only in case", {
            contentWith { $0.title = .translations(["en-US": "a"]); $0.body = .translations(["en_us": "b"]); $0.defaultLocale = "EN-us" }
        }),
        ("badge 0", { contentWith { $0.badge = 0 } }),
        ("ttl 0", { with { $0.message.ttlSeconds = 0 } }),
        ("ttl max", { with { $0.message.ttlSeconds = 2_419_200 } }),
        ("hours 168", { with { $0.deliverWithinHours = 168 } }),
        ("target exactly 168 h", { with { $0.deliverWithinHours = nil; $0.targetDeliveryTime = "2026-01-08T00:00:00Z" } }),
        ("deliver_after in the past", { with { $0.deliverAfter = "2025-12-31T00:00:00Z" } }),
        ("empty optional strings are unset", {
            contentWith { $0.imageURL = ""; $0.sound = ""; $0.defaultLocale = "" }
        }),
        ("key 128 bytes", { with { $0.message.idempotencyKey = String(repeating: "k", count: 128) } }),
        ("android without image rules", { with { $0.message.platform = .android } }),
    ]

    @Test("valid requests pass", arguments: validCases)
    func valid(name: String, input: @Sendable () -> ScheduleInput) throws {
        _ = try Validator.validate(input(), now: Fixtures.now, generateIdempotencyKey: { "gen" })
    }

    @Test("defaults: priority normal, ttl 4 weeks, generated key")
    func defaults() throws {
        let s = Fixtures.schedule(Fixtures.message(key: nil))
        let v = try Validator.validate(s, now: Fixtures.now, generateIdempotencyKey: { "gen-uuid" })
        #expect(v.message.priority == .normal)
        #expect(v.message.ttl == .default)
        #expect(v.message.ttl.rawValue == 2_419_200)
        #expect(v.message.idempotencyKey == "gen-uuid")
        #expect(v.idempotencyKeyGenerated)
    }

    @Test("the key generator is not called when a key is given")
    func keyNotGenerated() throws {
        let v = try Validator.validate(Fixtures.schedule(), now: Fixtures.now, generateIdempotencyKey: {
            Issue.record("generator called")
            return "x"
        })
        #expect(v.message.idempotencyKey == "key-1")
        #expect(!v.idempotencyKeyGenerated)
    }

    static let tokens: [(String, Platform, String?)] = [
        (String(repeating: "ab", count: 32), .ios, nil),
        (String(repeating: "AB", count: 32), .ios, nil),
        (String(repeating: "0f", count: 100), .ios, nil),
        (String(repeating: "ab", count: 31), .ios, "64 to 200"),
        (String(repeating: "ab", count: 101), .ios, "64 to 200"),
        (String(repeating: "a", count: 65), .ios, "even"),
        (String(repeating: "zz", count: 32), .ios, "hexadecimal"),
        (String(repeating: "ab", count: 31) + "a-", .ios, "hexadecimal"),
        ("fcm:APA91b-xyz_123", .android, nil),
        ("has space", .android, "letters, digits"),
        ("dot.not.allowed", .android, "letters, digits"),
        ("slash/no", .android, "letters, digits"),
        (String(repeating: "a", count: 4097), .android, "at most 4096"),
        (String(repeating: "Zz9:-_", count: 600), .android, nil),
        ("", .android, "required"),
    ]

    @Test("device tokens", arguments: tokens)
    func deviceTokens(token: String, platform: Platform, problem: String?) {
        let why = Validator.deviceTokenProblem(token, platform: platform)
        if let problem {
            #expect(why?.contains(problem) == true, "\(why ?? "nil")")
        } else {
            #expect(why == nil)
        }
    }

    @Test("render input: device_token and locale are checked")
    func renderInput() {
        let input = RenderInput(message: Fixtures.message(), locale: "de CH", deviceToken: "xyz")
        let error = #expect(throws: ValidationError.self) {
            try Validator.validate(input, generateIdempotencyKey: { "k" })
        }
        #expect(error?.violations.map(\.field) == ["locale", "device_token"])
    }
}
