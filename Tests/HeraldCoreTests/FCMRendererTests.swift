import HeraldPrimitives
import Testing
@testable import HeraldCore

@Suite("FCM rendering")
struct FCMRendererTests {
    static func render(_ m: MessageInput, locale: String? = nil, token: String? = "fcm-token") throws -> FCMRendering {
        try FCMRenderer.render(Fixtures.validated(m), locale: locale, deviceToken: token)
    }

    @Test("priority and ttl", arguments: [
        (Priority?.none, UInt32?.none, "NORMAL", "2419200s"),
        (.low, 0, "NORMAL", "0s"),
        (.normal, 3600, "NORMAL", "3600s"),
        (.high, 60, "HIGH", "60s"),
    ])
    func priorityAndTTL(p: Priority?, ttl: UInt32?, priority: String, ttlText: String) throws {
        let r = try Self.render(Fixtures.message(platform: .android, priority: p, ttl: ttl))
        let v = try JSONParser.parse(r.body)
        #expect(v["message"]?["android"]?["priority"] == .string(priority))
        #expect(v["message"]?["android"]?["ttl"] == .string(ttlText))
    }

    @Test("full message")
    func full() throws {
        var m = Fixtures.rich()
        m.platform = .android
        m.android = ["collapse_key": "demo", "notification": ["icon": "a.png"], "enabled": true]
        let r = try Self.render(m, locale: "de-DE")
        #expect(r.resolvedLocale == "de")
        #expect(r.messageJSON == #"{"message":{"token":"fcm-token","notification":{"title":"Deine Bestellung ist unterwegs","body":"Verfolge Paket 1Z999 und sieh das Lieferfenster in der App.","image":"https://cdn.example.com/parcels/a10023.jpg"},"data":{"amount":"42.5","deeplink":"shop://orders/A-10023","items":"3","meta":"{\"carrier\":\"UPS\",\"express\":true,\"legs\":[1,2]}","order_id":"A-10023","ctx_idempotency_key":"order-A-10023-shipped","ctx_image_url":"https://cdn.example.com/parcels/a10023.jpg"},"android":{"priority":"HIGH","ttl":"3600s","collapse_key":"demo","notification":{"sound":"chime.caf","icon":"a.png"}}}}"#)
        #expect(r.warnings.contains("FCM has no subtitle; content.subtitle is not sent to Android"))
    }

    @Test("minimal message without a token")
    func minimal() throws {
        let r = try Self.render(Fixtures.message(platform: .android), token: nil)
        #expect(r.messageJSON == #"{"message":{"notification":{"title":"Hello","body":"World"},"data":{"ctx_idempotency_key":"key-1"},"android":{"priority":"NORMAL","ttl":"2419200s"}}}"#)
    }

    @Test("android enabled:false disables Android delivery")
    func disabled() throws {
        #expect(throws: RenderError.disabled(.android)) {
            try Self.render(Fixtures.message(platform: .android, android: ["enabled": false]))
        }
    }

    @Test("data values become strings", arguments: [
        (JSONValue.string("s"), "s"), (.number(3), "3"), (.number(0.5), "0.5"), (.bool(true), "true"),
        (.null, "null"), (.array([1, "a"]), #"[1,"a"]"#), (.object(["b": 1, "a": nil]), #"{"a":null,"b":1}"#),
    ])
    func dataStrings(value: JSONValue, expected: String) {
        #expect(FCMRenderer.dataString(value) == expected)
    }
}
