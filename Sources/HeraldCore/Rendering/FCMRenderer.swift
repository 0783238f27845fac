import HeraldPrimitives

/// One FCM HTTP v1 send request body.
public struct FCMRendering: Sendable, Hashable {
    /// `{"message":{…}}`, compact UTF-8 JSON.
    public var body: [UInt8]
    /// The translation key used, or `default_locale`/nil when nothing is translated.
    public var resolvedLocale: String?
    /// Notes for Render's `warnings`.
    public var warnings: [String]

    /// The body as text (`RenderResponse.fcm.message_json`).
    public var messageJSON: String { String(decoding: body, as: UTF8.self) }
}

/// Renders messages in the FCM HTTP v1 format (the Skygear mapping carried
/// over from legacy GCM).
///
/// `{"message":{"token":…, "notification":{"title","body","image"},
/// "data":{…}, "android":{"priority","ttl","collapse_key","notification":{"sound"}}}}`
/// - `token` only when a device token is given.
/// - `data`: user_info keys (byte order) with string values as is and other
///   values as compact JSON text (FCM data values must be strings), then
///   `ctx_idempotency_key` and, with an image, `ctx_image_url`.
/// - `android.priority`: `HIGH` for HIGH, else `NORMAL` (FCM has no low);
///   `android.ttl`: `"<seconds>s"` (`"0s"` = now or never).
/// - FCM has no subtitle: it is dropped, with a warning.
/// - The `android` override is FCM's `AndroidConfig` (as Skygear's
///   `platform.android`: `collapse_key`, `notification.icon`, …) and is
///   deep-merged into `message.android` (objects recursively, `null`
///   deletes, `enabled` never sent; `enabled: false` →
///   ``RenderError/disabled(_:)``).
public enum FCMRenderer {
    /// Renders the FCM message for one device (or without a token for Render).
    public static func render(_ message: PushMessage, locale: String?, deviceToken: String?) throws(RenderError) -> FCMRendering {
        let parts = try parts(message, locale: locale)
        var msg = OrderedObject(capacity: 4)
        if let t = nonEmpty(deviceToken) { msg.append("token", .string(t)) }
        msg.append("notification", parts.notification)
        msg.append("data", parts.data)
        msg.append("android", parts.android)
        return FCMRendering(body: try write(msg), resolvedLocale: parts.resolved, warnings: parts.warnings)
    }

    /// The pieces of the alert message: `notification`, `data` and
    /// `android` (overrides merged), the locale used and the warnings.
    struct Parts {
        var notification: OrderedObject
        var data: OrderedObject
        var android: OrderedObject
        var resolved: String?
        var warnings: [String]
    }

    static func parts(_ message: PushMessage, locale: String?) throws(RenderError) -> Parts {
        guard message.isEnabled(on: .android) else { throw .disabled(.android) }
        let c = message.content
        let (resolved, match) = APNsRenderer.resolveLocale(c, requested: locale)
        var warnings = APNsRenderer.localeWarnings(requested: locale, resolved: resolved, match: match)

        var notification = OrderedObject(capacity: 3)
        if let t = nonEmpty(c.title?.text(in: resolved)) { notification.append("title", .string(t)) }
        if let b = nonEmpty(c.body?.text(in: resolved)) { notification.append("body", .string(b)) }
        let image = nonEmpty(c.imageURL)
        if let image { notification.append("image", .string(image)) }
        if nonEmpty(c.subtitle?.text(in: resolved)) != nil {
            warnings.append("FCM has no subtitle; content.subtitle is not sent to Android")
        }

        var data = OrderedObject(capacity: c.userInfo.count + 2)
        for (k, v) in c.userInfo {
            data.append(k, .string(dataString(v)))
        }
        data.append("ctx_idempotency_key", .string(message.idempotencyKey))
        if let image { data.append("ctx_image_url", .string(image)) }

        var android = OrderedObject(capacity: 4)
        android.append("priority", .string(message.priority.androidPriority.rawValue))
        android.append("ttl", .string(String(message.ttl.rawValue) + "s"))
        if let k = message.collapseID { android.append("collapse_key", .string(k)) }
        if let s = nonEmpty(c.sound) {
            var n = OrderedObject(capacity: 1)
            n.append("sound", .string(s))
            android.append("notification", n)
        }
        if let overrides = message.android {
            for (key, value) in overrides where key != "enabled" {
                android.merge(key: key, value: value)
            }
        }
        return Parts(notification: notification, data: data, android: android, resolved: resolved, warnings: warnings)
    }

    /// `{"message":` + `msg` + `}`.
    static func write(_ msg: OrderedObject) throws(RenderError) -> [UInt8] {
        var w = JSONWriter(capacity: 1024)
        w.writeRaw("{\"message\":")
        do {
            try msg.write(to: &w)
        } catch {
            throw .invalid(ValidationError([FieldViolation(field: "android", reason: "NaN and infinity are not valid JSON numbers")]))
        }
        w.writeByte(UInt8(ascii: "}"))
        return w.finish()
    }

    /// FCM `data` values are strings: strings as is, others as compact JSON.
    static func dataString(_ v: JSONValue) -> String {
        if case .string(let s) = v { return s }
        return v.description
    }
}
