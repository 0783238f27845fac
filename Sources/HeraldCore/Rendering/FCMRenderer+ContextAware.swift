public import HeraldPrimitives

/// The context-aware pushes on Android: the handoff and the revoke are
/// data-only messages (FCM wakes the app, which decides when to present);
/// the fallback at window end is the ordinary notification message
/// (``FCMRenderer/render(_:locale:deviceToken:)``).
///
/// Handoff, keys in this order:
/// `{"message":{"token":…,"data":{<user_info…>,"ctx_idempotency_key":…,
/// ["ctx_image_url":…,]"ctx_notification":"<JSON text>","ctx_window_end":…},
/// "android":{"priority":"HIGH","ttl":"<n>s",…}}}`
/// - `ctx_notification`: what the app should present, as JSON text (data
///   values are strings): the alert's `notification` (`title`, `body`,
///   `image`) merged with its `android.notification` (`sound`, and the
///   override's `icon`, `channel_id`, …).
/// - `ctx_window_end`: RFC 3339 UTC, when Herald sends the fallback.
/// - `android`: `priority` HIGH; `ttl` the message's TTL cut to the window
///   end (`"0s"` stays now or never); no `collapse_key` (a handoff must not
///   replace the previous message); the other `android` overrides except
///   `notification` and `data` (they would make it a notification message
///   or replace the `ctx_` keys).
///
/// Revoke: `{"message":{"token":…,"data":{"ctx_revoke":"<key>"},
/// "android":{"priority":"HIGH","ttl":"<n>s"}}}`.
extension FCMRenderer {
    public static func renderHandoff(
        _ message: PushMessage, locale: String?, deviceToken: String?, sendTime: Timestamp, windowEnd: Timestamp,
        quiet: [QuietSpan] = []
    ) throws(RenderError) -> FCMRendering {
        do {
            return try renderHandoff(message, locale: locale, deviceToken: deviceToken, sendTime: sendTime, windowEnd: windowEnd,
                                     quietJSON: quiet.isEmpty ? nil : QuietSpan.json(quiet))
        } catch {
            // Too large with the quiet periods (Schedule checked it without
            // them): sent without them; the fallback still obeys quiet hours.
            guard !quiet.isEmpty, case .invalid = error else { throw error }
            return try renderHandoff(message, locale: locale, deviceToken: deviceToken, sendTime: sendTime, windowEnd: windowEnd,
                                     quietJSON: nil)
        }
    }

    private static func renderHandoff(
        _ message: PushMessage, locale: String?, deviceToken: String?, sendTime: Timestamp, windowEnd: Timestamp, quietJSON: String?
    ) throws(RenderError) -> FCMRendering {
        var parts = try parts(message, locale: locale)
        var present = parts.notification
        switch parts.android.remove("notification") {
        case .object(let extra)?:
            for entry in extra.entries {
                switch entry.node {
                case .leaf(let value)?: present.merge(key: entry.key, value: value)
                case .object(let object)?: present.merge(key: entry.key, value: object.jsonValue)
                case nil: break
                }
            }
        case .leaf(.object(let extra))?:
            present.merge(extra)
        default:
            break
        }
        var text = JSONWriter(capacity: 256)
        do { try present.write(to: &text) } catch {
            throw .invalid(ValidationError([FieldViolation(field: "android", reason: "NaN and infinity are not valid JSON numbers")]))
        }
        parts.data.append("ctx_notification", .string(String(decoding: text.finish(), as: UTF8.self)))
        parts.data.append("ctx_window_end", .string(RFC3339.format(windowEnd)))
        if let quietJSON { parts.data.append("ctx_quiet", .string(quietJSON)) }

        var android = OrderedObject(capacity: 4)
        android.append("priority", .string(FCMAndroidPriority.high.rawValue))
        android.append("ttl", .string(String(handoffTTL(message.ttl, sendTime: sendTime, windowEnd: windowEnd)) + "s"))
        for entry in parts.android.entries {
            guard let node = entry.node, !["priority", "ttl", "collapse_key", "notification", "data"].contains(entry.key) else { continue }
            switch node {
            case .leaf(let value): android.append(entry.key, value)
            case .object(let object): android.append(entry.key, object)
            }
        }
        var msg = OrderedObject(capacity: 3)
        if let t = nonEmpty(deviceToken) { msg.append("token", .string(t)) }
        msg.append("data", parts.data)
        msg.append("android", android)
        return FCMRendering(body: try write(msg), resolvedLocale: parts.resolved, warnings: parts.warnings)
    }

    /// The revoke for a cancelled or superseded handed-off message: data
    /// only, high priority, alive until `expiresAt` (the old window end) or
    /// now-or-never when nil.
    public static func renderRevoke(idempotencyKey: String, deviceToken: String?, sendTime: Timestamp, expiresAt: Timestamp?) -> FCMRendering {
        var w = JSONWriter(capacity: 160)
        w.writeRaw("{\"message\":{")
        if let t = nonEmpty(deviceToken) {
            w.writeRaw("\"token\":")
            w.writeString(t)
            w.writeByte(UInt8(ascii: ","))
        }
        w.writeRaw("\"data\":{\"ctx_revoke\":")
        w.writeString(idempotencyKey)
        let ttl = expiresAt.map { max(0, $0.ceilingSeconds - sendTime.seconds) } ?? 0
        w.writeRaw("},\"android\":{\"priority\":\"HIGH\",\"ttl\":")
        w.writeString(String(min(ttl, Int64(TimeToLive.maximum.rawValue))) + "s")
        w.writeRaw("}}}")
        return FCMRendering(body: w.finish(), resolvedLocale: nil, warnings: [])
    }

    /// Seconds a handoff may wait in FCM: the TTL, cut to the window end
    /// (at least 1 s); 0 stays 0 (now or never).
    static func handoffTTL(_ ttl: TimeToLive, sendTime: Timestamp, windowEnd: Timestamp) -> Int64 {
        guard ttl.rawValue != 0 else { return 0 }
        return max(1, min(Int64(ttl.rawValue), windowEnd.ceilingSeconds - sendTime.seconds))
    }
}

extension OrderedObject {
    /// The object as a plain JSON value (key order is lost; used only to
    /// merge it into another object).
    var jsonValue: JSONValue {
        var out: JSONObject = [:]
        for entry in entries {
            switch entry.node {
            case .leaf(let value)?: out[entry.key] = value
            case .object(let object)?: out[entry.key] = object.jsonValue
            case nil: break
            }
        }
        return .object(out)
    }
}
