import HeraldPrimitives
import Testing
@testable import HeraldCore

@Suite("APNs rendering")
struct APNsRendererTests {
    static let now = Fixtures.now

    static func render(_ m: MessageInput, locale: String? = nil, sendTime: Timestamp = now) throws -> APNsRendering {
        try APNsRenderer.render(Fixtures.validated(m), locale: locale, deviceToken: Fixtures.token, apnsID: Fixtures.apnsID, sendTime: sendTime)
    }

    @Test("priority → apns-priority", arguments: [
        (Priority?.none, "5"), (.low, "1"), (.normal, "5"), (.high, "10"),
    ])
    func priority(p: Priority?, expected: String) throws {
        let r = try Self.render(Fixtures.message(priority: p))
        #expect(r.header("apns-priority") == expected)
        #expect(r.header("apns-push-type") == "alert")
    }

    @Test("ttl → apns-expiration", arguments: [
        (UInt32?.none, Timestamp(seconds: 1_767_225_600), "1769644800"),
        (0, Timestamp(seconds: 1_767_225_600), "0"),
        (3600, Timestamp(seconds: 1_767_225_600), "1767229200"),
        (3600, Timestamp(seconds: 1_767_225_600, nanoseconds: 250_000_000), "1767229201"),
        (2_419_200, Timestamp(seconds: 1_767_225_600), "1769644800"),
    ])
    func ttl(ttl: UInt32?, sendTime: Timestamp, expected: String) throws {
        let r = try Self.render(Fixtures.message(ttl: ttl), sendTime: sendTime)
        #expect(r.header("apns-expiration") == expected)
    }

    @Test("path and headers in order")
    func headers() throws {
        let r = try Self.render(Fixtures.message(priority: .high, ttl: 60, collapseID: "c-1"))
        #expect(r.path == "/3/device/" + Fixtures.token)
        #expect(r.headers == [
            HTTPHeader(name: "apns-push-type", value: "alert"),
            HTTPHeader(name: "apns-topic", value: "com.example.app"),
            HTTPHeader(name: "apns-priority", value: "10"),
            HTTPHeader(name: "apns-expiration", value: "1767225660"),
            HTTPHeader(name: "apns-collapse-id", value: "c-1"),
            HTTPHeader(name: "apns-id", value: Fixtures.apnsID),
        ])
        let plain = try Self.render(Fixtures.message())
        #expect(plain.header("apns-collapse-id") == nil)
    }

    @Test("apns-id and token are written lower-case; missing token gives a placeholder")
    func lowercases() throws {
        let m = try Fixtures.validated(Fixtures.message())
        let r = try APNsRenderer.render(m, locale: nil, deviceToken: Fixtures.token.uppercased(), apnsID: Fixtures.apnsID.uppercased(), sendTime: Self.now)
        #expect(r.header("apns-id") == Fixtures.apnsID)
        #expect(r.path == "/3/device/" + Fixtures.token)
        let p = try APNsRenderer.render(m, locale: nil, deviceToken: nil, apnsID: Fixtures.apnsID, sendTime: Self.now)
        #expect(p.path == "/3/device/<device_token>")
        #expect(p.warnings.contains { $0.contains("placeholder") })
    }

    @Test("minimal payload")
    func minimal() throws {
        let r = try Self.render(Fixtures.message())
        #expect(r.payloadJSON == #"{"aps":{"alert":{"title":"Hello","body":"World"}},"ctx_idempotency_key":"key-1"}"#)
    }

    @Test("badge 0 is sent (it clears the badge)")
    func badgeZero() throws {
        var c = Fixtures.content()
        c.badge = 0
        let r = try Self.render(Fixtures.message(content: c))
        #expect(r.payloadJSON.contains(#""badge":0"#))
    }

    @Test("full payload in each locale", arguments: [
        ("de-CH", "de", #"{"aps":{"alert":{"title":"Deine Bestellung ist unterwegs","subtitle":"Ankunft Donnerstag","body":"Verfolge Paket 1Z999 und sieh das Lieferfenster in der App.","launch-image":"splash"},"badge":3,"sound":"chime.caf","thread-id":"orders","category":"ORDER_UPDATE","mutable-content":1,"interruption-level":"time-sensitive"},"amount":42.5,"deeplink":"shop://orders/A-10023","items":3,"meta":{"carrier":"UPS","express":true,"legs":[1,2]},"order_id":"A-10023","ctx_idempotency_key":"order-A-10023-shipped","ctx_image_url":"https://cdn.example.com/parcels/a10023.jpg"}"#),
        ("fr_FR", "fr", #"{"aps":{"alert":{"title":"Votre commande est en route","subtitle":"Arrivée jeudi","body":"Suivez le colis 1Z999 et consultez le créneau dans l’app.","launch-image":"splash"},"badge":3,"sound":"chime.caf","thread-id":"orders","category":"ORDER_UPDATE","mutable-content":1,"interruption-level":"time-sensitive"},"amount":42.5,"deeplink":"shop://orders/A-10023","items":3,"meta":{"carrier":"UPS","express":true,"legs":[1,2]},"order_id":"A-10023","ctx_idempotency_key":"order-A-10023-shipped","ctx_image_url":"https://cdn.example.com/parcels/a10023.jpg"}"#),
        ("ja", "en", #"{"aps":{"alert":{"title":"Your order has shipped","subtitle":"Arriving Thursday","body":"Track parcel 1Z999 and see the delivery window in the app.","launch-image":"splash"},"badge":3,"sound":"chime.caf","thread-id":"orders","category":"ORDER_UPDATE","mutable-content":1,"interruption-level":"time-sensitive"},"amount":42.5,"deeplink":"shop://orders/A-10023","items":3,"meta":{"carrier":"UPS","express":true,"legs":[1,2]},"order_id":"A-10023","ctx_idempotency_key":"order-A-10023-shipped","ctx_image_url":"https://cdn.example.com/parcels/a10023.jpg"}"#),
    ])
    func fullPayload(locale: String, resolved: String, expected: String) throws {
        let r = try Self.render(Fixtures.rich(), locale: locale)
        #expect(r.resolvedLocale == resolved)
        #expect(r.payloadJSON == expected)
        #expect(r.header("apns-collapse-id") == "order-A-10023")
        #expect(r.header("apns-priority") == "10")
    }

    @Test("locale warnings", arguments: [
        ("de", []), ("de-CH", ["no translation for locale de-CH; used de"]),
        ("ja", ["no translation for locale ja; used default_locale en"]),
        ("", ["no locale given; used default_locale en"]),
    ])
    func warnings(locale: String, expected: [String]) throws {
        let r = try Self.render(Fixtures.rich(), locale: locale)
        #expect(r.warnings == expected)
    }

    static let overrides: [(String, JSONObject, String)] = [
        ("aps.alert merges into the alert", ["aps": ["alert": ["action-loc-key": "PLAY"]]],
         #"{"aps":{"alert":{"title":"Hello","body":"World","action-loc-key":"PLAY"}},"ctx_idempotency_key":"key-1"}"#),
        ("aps.alert replaces a field", ["aps": ["alert": ["title": "Override"]]],
         #"{"aps":{"alert":{"title":"Override","body":"World"}},"ctx_idempotency_key":"key-1"}"#),
        ("Skygear style top-level aps keys", ["alert": ["action-loc-key": "PLAY"], "badge": 5],
         #"{"aps":{"alert":{"title":"Hello","body":"World","action-loc-key":"PLAY"},"badge":5},"ctx_idempotency_key":"key-1"}"#),
        ("alert as a string replaces the dictionary", ["aps": ["alert": "Just text"]],
         #"{"aps":{"alert":"Just text"},"ctx_idempotency_key":"key-1"}"#),
        ("null deletes", ["aps": ["alert": ["body": nil]]],
         #"{"aps":{"alert":{"title":"Hello"}},"ctx_idempotency_key":"key-1"}"#),
        ("new top-level keys are appended in byte order", ["z": 1, "a": ["b": [1, 2]]],
         #"{"aps":{"alert":{"title":"Hello","body":"World"}},"ctx_idempotency_key":"key-1","a":{"b":[1,2]},"z":1}"#),
        ("enabled true is not sent", ["enabled": true, "aps": ["sound": "default"]],
         #"{"aps":{"alert":{"title":"Hello","body":"World"},"sound":"default"},"ctx_idempotency_key":"key-1"}"#),
        ("user_info objects merge deeply", ["meta": ["b": 2]],
         #"{"aps":{"alert":{"title":"Hello","body":"World"}},"meta":{"a":1,"b":2},"ctx_idempotency_key":"key-1"}"#),
    ]

    @Test("ios overrides are deep-merged", arguments: overrides)
    func overrideMerge(name: String, ios: JSONObject, expected: String) throws {
        var c = Fixtures.content()
        if name.contains("user_info") { c.userInfo = ["meta": ["a": 1]] }
        let r = try Self.render(Fixtures.message(content: c, ios: ios))
        #expect(r.payloadJSON == expected)
    }

    @Test("ios enabled:false disables iOS delivery")
    func disabled() throws {
        let m = try Fixtures.validated(Fixtures.message(ios: ["enabled": false, "badge": 1]))
        #expect(throws: RenderError.disabled(.ios)) {
            try APNsRenderer.render(m, locale: nil, deviceToken: Fixtures.token, apnsID: Fixtures.apnsID, sendTime: Self.now)
        }
        #expect(APNsRenderer.payloadSizeViolations(m, handoffWindowEnd: nil).isEmpty)
    }

    /// A message whose payload is exactly `size` bytes, padded with 2- and
    /// 3-byte characters.
    static func message(payloadBytes size: Int) throws -> MessageInput {
        let base = try render(Fixtures.message(content: Fixtures.content(body: .text("x")))).payload.count
        var remaining = size - base + 1  // bytes of body text needed
        var text = ""
        while remaining % 3 != 0 { text += "é"; remaining -= 2 }
        text += String(repeating: "€", count: remaining / 3)
        return Fixtures.message(content: Fixtures.content(body: .text(text)))
    }

    @Test("payload limit: 4096 bytes pass, 4097 fail naming the size")
    func payloadLimit() throws {
        let ok = try Self.render(try Self.message(payloadBytes: 4096))
        #expect(ok.payload.count == 4096)
        let over = try Self.message(payloadBytes: 4097)
        #expect {
            try Self.render(over)
        } throws: { error in
            guard case .invalid(let e) = error as? RenderError else { return false }
            return e.violations == [FieldViolation(field: "content", reason: "APNs payload is 4097 bytes, over APNs' 4096-byte limit")]
        }
        let s = Fixtures.schedule(over)
        #expect(throws: ValidationError.self) { try Validator.validate(s, now: Self.now, generateIdempotencyKey: { "k" }) }
    }

    @Test("the handoff payload is size-checked too (context-aware schedules)")
    func handoffSize() throws {
        let m = try Fixtures.validated(try Self.message(payloadBytes: 4090))
        #expect(APNsRenderer.payloadSizeViolations(m, handoffWindowEnd: nil).isEmpty)
        let v = APNsRenderer.payloadSizeViolations(m, handoffWindowEnd: Self.now.adding(seconds: 3600))
        #expect(v.count == 1)
        #expect(v.first?.reason.hasPrefix("APNs handoff payload is 41") == true)
        let traditional = Fixtures.schedule(try Self.message(payloadBytes: 4090), method: .traditional)
        _ = try Validator.validate(traditional, now: Self.now, generateIdempotencyKey: { "k" })
        let contextAware = Fixtures.schedule(try Self.message(payloadBytes: 4090), method: .contextAware)
        #expect(throws: ValidationError.self) { try Validator.validate(contextAware, now: Self.now, generateIdempotencyKey: { "k" }) }
    }

    @Test("every locale is checked at schedule time")
    func everyLocale() throws {
        let long = String(repeating: "日", count: 1400)  // 4200 bytes
        let c = Fixtures.content(
            title: .translations(["en": "Hi", "de": "Hallo", "ja": "こんにちは"]),
            body: .translations(["en": "Short", "de": long, "ja": long]), defaultLocale: "en")
        let m = try Fixtures.validated(Fixtures.message(content: c))
        let v = APNsRenderer.payloadSizeViolations(m, handoffWindowEnd: nil)
        #expect(v.count == 2)
        #expect(v[0].reason.hasPrefix("APNs payload for locale de is 42"))
        #expect(v[1].reason.hasPrefix("APNs payload for locale ja is 42"))
        // Rendering English alone is fine.
        _ = try APNsRenderer.render(m, locale: "en", deviceToken: nil, apnsID: Fixtures.apnsID, sendTime: Self.now)
    }

    @Test("context-aware handoff is a background push carrying the content and window end")
    func handoff() throws {
        let m = try Fixtures.validated(Fixtures.message(priority: .high, ttl: 7200, collapseID: "c", ios: ["aps": ["alert": ["x": 1]]]))
        let end = Self.now.adding(seconds: 3600)
        let r = try APNsRenderer.renderHandoff(m, locale: nil, deviceToken: Fixtures.token, apnsID: Fixtures.apnsID, sendTime: Self.now, windowEnd: end)
        #expect(r.headers == [
            HTTPHeader(name: "apns-push-type", value: "background"),
            HTTPHeader(name: "apns-topic", value: "com.example.app"),
            HTTPHeader(name: "apns-priority", value: "5"),
            HTTPHeader(name: "apns-expiration", value: "1767229200"),
            HTTPHeader(name: "apns-id", value: Fixtures.apnsID),
        ])
        #expect(r.payloadJSON == #"{"aps":{"content-available":1},"ctx_aps":{"alert":{"title":"Hello","body":"World","x":1}},"ctx_idempotency_key":"key-1","ctx_window_end":"2026-01-01T01:00:00Z"}"#)
        let zero = try APNsRenderer.renderHandoff(try Fixtures.validated(Fixtures.message(ttl: 0)), locale: nil, deviceToken: nil, apnsID: Fixtures.apnsID, sendTime: Self.now, windowEnd: end)
        #expect(zero.header("apns-expiration") == "0")
    }

    @Test("a hand-off carries the quiet periods inside its window as epoch seconds; too large with them, it goes without")
    func handoffQuietPeriods() throws {
        let m = try Fixtures.validated(Fixtures.message(ttl: 7200))
        let end = Self.now.adding(seconds: 3600)
        let quiet = [QuietSpan(start: 1_767_225_600_500, end: 1_767_226_200_001), QuietSpan(start: 1_767_228_000_000, end: 1_767_229_200_000)]
        let r = try APNsRenderer.renderHandoff(
            m, locale: nil, deviceToken: Fixtures.token, apnsID: Fixtures.apnsID, sendTime: Self.now, windowEnd: end, quiet: quiet)
        #expect(r.payloadJSON.hasSuffix(#","ctx_window_end":"2026-01-01T01:00:00Z","ctx_quiet":[[1767225600,1767226201],[1767228000,1767229200]]}"#))
        // A body that fits only without the periods: rendered without them.
        let plain = try APNsRenderer.renderHandoff(m, locale: nil, deviceToken: nil, apnsID: Fixtures.apnsID, sendTime: Self.now, windowEnd: end)
        var big = m
        big.content.body = .text("World" + String(repeating: "b", count: 4096 - plain.payload.count - 5))
        let many = (0..<8).map { QuietSpan(start: 1_767_225_600_000 + Int64($0) * 86_400_000, end: 1_767_229_200_000 + Int64($0) * 86_400_000) }
        let fitted = try APNsRenderer.renderHandoff(
            big, locale: nil, deviceToken: nil, apnsID: Fixtures.apnsID, sendTime: Self.now, windowEnd: end, quiet: many)
        #expect(!fitted.payloadJSON.contains("ctx_quiet"))
        #expect(fitted.payload.count <= 4096)
    }

    @Test("revoke push")
    func revoke() {
        let r = APNsRenderer.renderRevoke(bundleID: "com.example.app", idempotencyKey: "k\"1", deviceToken: Fixtures.token, apnsID: Fixtures.apnsID, expiresAt: Self.now.adding(seconds: 60))
        #expect(r.payloadJSON == #"{"aps":{"content-available":1},"ctx_revoke":"k\"1"}"#)
        #expect(r.header("apns-push-type") == "background")
        #expect(r.header("apns-priority") == "5")
        #expect(r.header("apns-expiration") == "1767225660")
    }
}
