import HeraldPrimitives
@testable import HeraldCore

/// Shared builders for test messages.
enum Fixtures {
    static let now = Timestamp(seconds: 1_767_225_600)  // 2026-01-01T00:00:00Z
    static let token = String(repeating: "ab", count: 32)
    static let apnsID = "123e4567-e89b-12d3-a456-426614174000"

    static func content(
        title: LocalizedText? = .text("Hello"),
        subtitle: LocalizedText? = nil,
        body: LocalizedText? = .text("World"),
        defaultLocale: String? = nil
    ) -> NotificationContent {
        NotificationContent(title: title, subtitle: subtitle, body: body, defaultLocale: defaultLocale)
    }

    static func message(
        platform: Platform? = .ios,
        content: NotificationContent? = Fixtures.content(),
        priority: Priority? = nil,
        ttl: UInt32? = nil,
        collapseID: String? = nil,
        ios: JSONObject? = nil,
        android: JSONObject? = nil,
        key: String? = "key-1"
    ) -> MessageInput {
        MessageInput(
            bundleID: "com.example.app", platform: platform, content: content,
            priority: priority, ttlSeconds: ttl, collapseID: collapseID,
            ios: ios, android: android, idempotencyKey: key)
    }

    static func schedule(
        _ message: MessageInput = Fixtures.message(),
        userID: String = "user-1",
        campaignID: String = "welcome",
        method: DeliveryMethod? = .traditional,
        hours: UInt32? = 3,
        target: String? = nil,
        after: String? = nil
    ) -> ScheduleInput {
        ScheduleInput(
            message: message, userID: userID, campaignID: campaignID,
            deliveryMethod: method, deliverWithinHours: hours,
            targetDeliveryTime: target, deliverAfter: after)
    }

    /// A realistic translated message (the benchmark's shape).
    static func rich() -> MessageInput {
        let content = NotificationContent(
            title: .translations(["en": "Your order has shipped", "de": "Deine Bestellung ist unterwegs", "fr": "Votre commande est en route"]),
            subtitle: .translations(["en": "Arriving Thursday", "de": "Ankunft Donnerstag", "fr": "Arrivée jeudi"]),
            body: .translations([
                "en": "Track parcel 1Z999 and see the delivery window in the app.",
                "de": "Verfolge Paket 1Z999 und sieh das Lieferfenster in der App.",
                "fr": "Suivez le colis 1Z999 et consultez le créneau dans l’app.",
            ]),
            defaultLocale: "en",
            sound: "chime.caf",
            badge: 3,
            userInfo: [
                "order_id": "A-10023",
                "amount": 42.5,
                "items": 3,
                "deeplink": "shop://orders/A-10023",
                "meta": ["carrier": "UPS", "express": true, "legs": [1, 2]],
            ],
            threadID: "orders",
            imageURL: "https://cdn.example.com/parcels/a10023.jpg",
            category: "ORDER_UPDATE")
        return MessageInput(
            bundleID: "com.example.shop", platform: .ios, content: content,
            priority: .high, ttlSeconds: 3600, collapseID: "order-A-10023",
            ios: ["aps": ["alert": ["launch-image": "splash"], "interruption-level": "time-sensitive"]],
            idempotencyKey: "order-A-10023-shipped")
    }

    static func validated(_ m: MessageInput) throws -> PushMessage {
        try Validator.validate(RenderInput(message: m), generateIdempotencyKey: { "generated-key" })
    }

    static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        try JSONParser.parse(bytes)
    }
}
