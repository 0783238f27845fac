public import HeraldPrimitives

/// Why a validated message cannot be rendered for a device.
public enum RenderError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The rendered payload breaks a rule (e.g. over 4096 bytes); INVALID_ARGUMENT.
    case invalid(ValidationError)
    /// The platform's override says `"enabled": false`: nothing is sent to it.
    case disabled(Platform)

    public var description: String {
        switch self {
        case .invalid(let e): e.description
        case .disabled(let p): "\(p.rawValue) delivery is disabled by the \(p.rawValue) override (enabled: false)"
        }
    }
}

/// One APNs request, ready for the HTTP/2 client.
public struct APNsRendering: Sendable, Hashable {
    /// `:path`, `/3/device/<token>`.
    public var path: String
    /// In order: `apns-push-type`, `apns-topic`, `apns-priority`,
    /// `apns-expiration`, `apns-collapse-id` (when set), `apns-id`.
    public var headers: [HTTPHeader]
    /// The compact UTF-8 JSON payload (≤ 4096 bytes).
    public var payload: [UInt8]
    /// The translation key used, or `default_locale`/nil when nothing is translated.
    public var resolvedLocale: String?
    /// The device locale asked for.
    public var requestedLocale: String?
    /// How ``resolvedLocale`` was found (nil when nothing is translated).
    public var localeMatch: LocaleResolver.Match?
    /// True when no device token was given and the path shows a placeholder.
    public var placeholderPath: Bool

    /// Notes for Render's `warnings` (a locale fallback, a placeholder path);
    /// built on demand so the delivery path does not pay for them.
    public var warnings: [String] {
        var out = APNsRenderer.localeWarnings(requested: requestedLocale, resolved: resolvedLocale, match: localeMatch)
        if placeholderPath { out.append("no device_token given; the path shows a placeholder") }
        return out
    }

    /// The payload as text.
    public var payloadJSON: String { String(decoding: payload, as: UTF8.self) }

    /// The value of a header, if present.
    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}

/// Renders messages as APNs requests (SPEC §5).
///
/// Alert payload, keys in this order:
/// `aps` {`alert` {`title`, `subtitle`, `body`}, `badge`, `sound`,
/// `thread-id`, `category`, `mutable-content`: 1 (with an image)}, then the
/// `user_info` keys (byte order), `ctx_idempotency_key`, `ctx_image_url`
/// (with an image); then the `ios` overrides deep-merged:
/// - `enabled` is never sent; `enabled: false` → ``RenderError/disabled(_:)``.
/// - A key that already exists keeps its place and takes the override's
///   value; two objects merge recursively (so
///   `{"aps":{"alert":{"action-loc-key":"PLAY"}}}` adds to the alert
///   dictionary, and a `user_info` object merges with an override object);
///   `null` deletes the key; new keys follow the existing ones of their
///   object in byte order.
/// - Skygear style: a top-level override key that is an `aps` dictionary key
///   (`alert`, `badge`, `sound`, `thread-id`, `category`, `content-available`,
///   `mutable-content`, `target-content-id`, `interruption-level`,
///   `relevance-score`, `filter-criteria`) is merged into `aps` (over
///   `ios.aps`), so `{"alert":{"action-loc-key":"PLAY"},"badge":5}` works as
///   in Skygear.
/// - Top-level `ctx_` keys are reserved for Herald (a validation error).
///
/// Context-aware handoff (background) payload: the alert payload above, with
/// its `aps` dictionary moved to `ctx_aps` (what the SDK should present), a
/// new `aps` {`content-available`: 1} first, and `ctx_window_end` (RFC 3339
/// UTC: when Herald sends the alert fallback). Headers: `background`,
/// priority 5, expiration min(send time + ttl, window end) (0 when ttl is 0),
/// no collapse id.
///
/// Revoke (background) payload: `{"aps":{"content-available":1},
/// "ctx_revoke":"<idempotency key>"}`: the SDK drops the handed-off message.
public enum APNsRenderer {
    /// APNs' limit for a regular remote notification payload.
    public static let maximumPayloadBytes = 4096

    /// The `aps` keys accepted at the top level of the `ios` override.
    public static let apsKeys: Set<String> = [
        "alert", "badge", "sound", "thread-id", "category", "content-available",
        "mutable-content", "target-content-id", "interruption-level",
        "relevance-score", "filter-criteria",
    ]

    /// The path used when Render is called without a device token.
    public static let placeholderToken = "<device_token>"

    // MARK: Public entry points

    /// Renders the alert push for one device.
    ///
    /// - Parameters:
    ///   - locale: the device locale (nil → default_locale).
    ///   - deviceToken: hex token (validated by ``Validator``); nil → placeholder path.
    ///   - apnsID: a UUID from the caller; written lower-case.
    ///   - sendTime: when the push is sent (Render: the time of the call),
    ///     the base of `apns-expiration`.
    public static func render(
        _ message: PushMessage,
        locale: String?,
        deviceToken: String?,
        apnsID: String,
        sendTime: Timestamp
    ) throws(RenderError) -> APNsRendering {
        guard message.isEnabled(on: .ios) else { throw .disabled(.ios) }
        let (resolved, match) = resolveLocale(message.content, requested: locale)
        let payload = try payload(message, locale: resolved, handoffWindowEnd: nil)
        let headers = makeHeaders(
            pushType: .alert, topic: message.bundleID, priority: message.priority.apnsPriority,
            expiration: .from(ttl: message.ttl, sendTime: sendTime),
            collapseID: message.collapseID, apnsID: apnsID)
        return APNsRendering(
            path: path(deviceToken), headers: headers, payload: payload, resolvedLocale: resolved,
            requestedLocale: locale, localeMatch: match, placeholderPath: nonEmpty(deviceToken) == nil)
    }

    /// Renders the context-aware handoff (background push) for one device.
    public static func renderHandoff(
        _ message: PushMessage,
        locale: String?,
        deviceToken: String?,
        apnsID: String,
        sendTime: Timestamp,
        windowEnd: Timestamp,
        quiet: [QuietSpan] = []
    ) throws(RenderError) -> APNsRendering {
        guard message.isEnabled(on: .ios) else { throw .disabled(.ios) }
        let (resolved, match) = resolveLocale(message.content, requested: locale)
        let payload: [UInt8]
        do {
            payload = try Self.payload(message, locale: resolved, handoffWindowEnd: windowEnd, quiet: quiet)
        } catch {
            // Schedule checked the size without the quiet periods: a payload
            // they push over the limit goes without them (the fallback still
            // obeys the quiet hours).
            guard !quiet.isEmpty, case .invalid = error else { throw error }
            payload = try Self.payload(message, locale: resolved, handoffWindowEnd: windowEnd)
        }
        var expiration = APNsExpiration.from(ttl: message.ttl, sendTime: sendTime)
        if expiration.rawValue != 0 { expiration.rawValue = min(expiration.rawValue, windowEnd.ceilingSeconds) }
        let headers = makeHeaders(
            pushType: .background, topic: message.bundleID, priority: .considerDevicePower,
            expiration: expiration, collapseID: nil, apnsID: apnsID)
        return APNsRendering(
            path: path(deviceToken), headers: headers, payload: payload, resolvedLocale: resolved,
            requestedLocale: locale, localeMatch: match, placeholderPath: nonEmpty(deviceToken) == nil)
    }

    /// Renders the revoke push sent when a handed-off message is cancelled
    /// or superseded. Expires at `expiresAt` (the old window end), or is
    /// now-or-never when nil.
    public static func renderRevoke(
        bundleID: String,
        idempotencyKey: String,
        deviceToken: String?,
        apnsID: String,
        expiresAt: Timestamp?
    ) -> APNsRendering {
        var w = JSONWriter(capacity: 96)
        w.writeRaw("{\"aps\":{\"content-available\":1},\"ctx_revoke\":")
        w.writeString(idempotencyKey)
        w.writeByte(UInt8(ascii: "}"))
        let headers = makeHeaders(
            pushType: .background, topic: bundleID, priority: .considerDevicePower,
            expiration: APNsExpiration(rawValue: expiresAt?.ceilingSeconds ?? 0), collapseID: nil, apnsID: apnsID)
        return APNsRendering(
            path: path(deviceToken), headers: headers, payload: w.finish(), resolvedLocale: nil,
            requestedLocale: nil, localeMatch: nil, placeholderPath: nonEmpty(deviceToken) == nil)
    }

    /// Reports every locale whose payload is over 4096 bytes — for the
    /// alert push and, when `handoffWindowEnd` is given, for the handoff.
    ///
    /// The payload is rendered once, for the first locale. In a validated
    /// message every translated field has a non-empty text in every locale,
    /// so the payloads of two locales differ only in those texts: each other
    /// locale's size is the first one's plus the difference of its texts'
    /// encoded lengths. Rendering each locale in full would cost
    /// locales × payload (200 locales × a 4 MiB `user_info`).
    public static func payloadSizeViolations(_ message: PushMessage, handoffWindowEnd: Timestamp?) -> [FieldViolation] {
        guard message.isEnabled(on: .ios) else { return [] }
        let locales: [String?] = message.content.isTranslated ? message.content.locales.map { $0 } : [nil]
        let localized = localizedAlertFields(message)
        var out: [FieldViolation] = []
        var base: (locale: String?, alert: Int, handoff: Int?, texts: Int)?
        for locale in locales {
            do {
                if let b = base, let texts = encodedLength(localized, in: locale) {
                    let delta = texts - b.texts
                    try checkSize(b.alert + delta, message, locale: locale, handoff: false)
                    if let handoff = b.handoff { try checkSize(handoff + delta, message, locale: locale, handoff: true) }
                    continue
                }
                let alert = try unchecked(message, locale: locale, handoffWindowEnd: nil).count
                let handoff = try handoffWindowEnd.map { end throws(RenderError) in
                    try unchecked(message, locale: locale, handoffWindowEnd: end).count
                }
                if base == nil, let texts = encodedLength(localized, in: locale) {
                    base = (locale, alert, handoff, texts)
                }
                try checkSize(alert, message, locale: locale, handoff: false)
                if let handoff { try checkSize(handoff, message, locale: locale, handoff: true) }
            } catch {
                if case .invalid(let e) = error { out += e.violations }
            }
        }
        return out
    }

    /// The translated alert fields (title, subtitle, body) that the payload
    /// writes from the content — those the `ios` override does not replace.
    static func localizedAlertFields(_ message: PushMessage) -> [LocalizedText] {
        let c = message.content
        var patch: JSONObject = [:]
        switch APNsPayloadWriter.split(message.ios).aps["alert"] {
        case nil: break
        case .object(let p)?: patch = p
        case _?: return []  // `null` or a replacement: no localized text is written
        }
        var out: [LocalizedText] = []
        for (name, field) in [("title", c.title), ("subtitle", c.subtitle), ("body", c.body)] {
            if let field, field.translations != nil, patch[name] == nil { out.append(field) }
        }
        return out
    }

    /// The encoded (escaped, quoted) length of the fields' texts in
    /// `locale`; nil when one is missing or empty (then the payload's shape
    /// differs and the locale is rendered in full).
    static func encodedLength(_ fields: [LocalizedText], in locale: String?) -> Int? {
        var total = 0
        for field in fields {
            guard let text = nonEmpty(field.text(in: locale)) else { return nil }
            var w = JSONWriter(capacity: text.utf8.count + 2)
            w.writeString(text)
            total += w.count
        }
        return total
    }

    /// The payload bytes for a resolved locale (alert, or handoff when
    /// `handoffWindowEnd` is given), size-checked.
    static func payload(
        _ message: PushMessage, locale: String?, handoffWindowEnd: Timestamp?, quiet: [QuietSpan] = []
    ) throws(RenderError) -> [UInt8] {
        let w = try unchecked(message, locale: locale, handoffWindowEnd: handoffWindowEnd, quiet: quiet)
        try checkSize(w.count, message, locale: locale, handoff: handoffWindowEnd != nil)
        return w.finish()
    }

    /// The payload written, not yet size-checked.
    static func unchecked(
        _ message: PushMessage, locale: String?, handoffWindowEnd: Timestamp?, quiet: [QuietSpan] = []
    ) throws(RenderError) -> JSONWriter {
        var w = JSONWriter(capacity: 1024)
        let writer = APNsPayloadWriter(ios: message.ios, locale: locale)
        do {
            if let end = handoffWindowEnd {
                try writer.writeHandoffPayload(&w, message, windowEnd: end, quiet: quiet)
            } else {
                try writer.writeAlertPayload(&w, message)
            }
        } catch {
            throw .invalid(ValidationError([FieldViolation(field: "ios", reason: "NaN and infinity are not valid JSON numbers")]))
        }
        return w
    }

    /// Throws INVALID_ARGUMENT naming the locale and the size when a payload
    /// of `size` bytes is over APNs' limit.
    static func checkSize(_ size: Int, _ message: PushMessage, locale: String?, handoff: Bool) throws(RenderError) {
        guard size > maximumPayloadBytes else { return }
        let what = handoff ? "APNs handoff payload" : "APNs payload"
        let which = message.content.isTranslated ? " for locale \(ErrorText.truncated(locale ?? ""))" : ""
        throw .invalid(ValidationError([FieldViolation(
            field: "content",
            reason: "\(what)\(which) is \(size) bytes, over APNs' \(maximumPayloadBytes)-byte limit")]))
    }

    // MARK: Building

    /// `:path` for a device token (`/3/device/<token>`, lowercased; a
    /// placeholder without one).
    public static func path(_ token: String?) -> String {
        guard let token, !token.isEmpty else { return "/3/device/" + placeholderToken }
        if hasUppercase(token) { return "/3/device/" + token.lowercased() }
        // One allocation, filled in place.
        return withBytes(token) { t in
            let prefix: StaticString = "/3/device/"
            let p = prefix.utf8CodeUnitCount
            return String(unsafeUninitializedCapacity: p + t.count) { out in
                out.baseAddress.unsafelyUnwrapped.update(from: prefix.utf8Start, count: p)
                if let base = t.baseAddress { (out.baseAddress.unsafelyUnwrapped + p).update(from: base, count: t.count) }
                return p + t.count
            }
        }
    }

    /// Whether `s` has an ASCII capital letter (SWAR: eight bytes a step).
    static func hasUppercase(_ s: String) -> Bool {
        withBytes(s) { p in
            let n = p.count
            var i = 0
            if let base = p.baseAddress {
                let raw = UnsafeRawPointer(base)
                let ones: UInt64 = 0x0101_0101_0101_0101
                let low7: UInt64 = ones &* 0x7F
                while i + 8 <= n {
                    let w = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                    // Bytes in 0x41...0x5A: the "has between" bit trick
                    // (exact for bounds ≤ 128; bytes ≥ 0x80 are excluded by ~w).
                    let x = w & low7
                    let between = (ones &* (127 + 0x5B) &- x) & ~w & (x &+ ones &* (127 - 0x40)) & (ones &* 0x80)
                    if between != 0 { return true }
                    i += 8
                }
            }
            while i < n {
                if p[i] >= 0x41 && p[i] <= 0x5A { return true }
                i += 1
            }
            return false
        }
    }

    /// Whether `key` is an `aps` dictionary key (see ``apsKeys``).
    static func isAPSKey(_ key: String) -> Bool {
        switch key {
        case "alert", "badge", "sound", "thread-id", "category", "content-available",
             "mutable-content", "target-content-id", "interruption-level",
             "relevance-score", "filter-criteria":
            return true
        default:
            return false
        }
    }

    static func makeHeaders(
        pushType: APNsPushType, topic: String, priority: APNsPriority,
        expiration: APNsExpiration, collapseID: String?, apnsID: String
    ) -> [HTTPHeader] {
        var h: [HTTPHeader] = []
        h.reserveCapacity(6)
        h.append(HTTPHeader(name: "apns-push-type", value: pushType.rawValue))
        h.append(HTTPHeader(name: "apns-topic", value: topic))
        h.append(HTTPHeader(name: "apns-priority", value: priority.description))
        h.append(HTTPHeader(name: "apns-expiration", value: expiration.description))
        if let c = collapseID { h.append(HTTPHeader(name: "apns-collapse-id", value: c)) }
        let id = hasUppercase(apnsID) ? apnsID.lowercased() : apnsID
        h.append(HTTPHeader(name: "apns-id", value: id))
        return h
    }

    /// Resolves the locale the way Render and delivery do: the translation
    /// key to use and how it was found (nil match when nothing is translated).
    static func resolveLocale(_ content: NotificationContent, requested: String?) -> (String?, LocaleResolver.Match?) {
        guard content.isTranslated else { return (nonEmpty(content.defaultLocale), nil) }
        let available = (content.title?.translations ?? content.body?.translations ?? content.subtitle?.translations)?.keys
        guard let available,
              let (locale, match) = LocaleResolver.resolve(requested: nonEmpty(requested), available: available, defaultLocale: nonEmpty(content.defaultLocale))
        else { return (nonEmpty(content.defaultLocale), nil) }
        return (locale, match)
    }

    /// The warnings Render reports for a locale resolution.
    public static func localeWarnings(requested: String?, resolved: String?, match: LocaleResolver.Match?) -> [String] {
        guard let match, let locale = resolved else { return [] }
        switch match {
        case .exact:
            return []
        case .language, .sameLanguage:
            return ["no translation for locale " + (requested ?? "") + "; used " + locale]
        case .defaultLocale:
            if let r = nonEmpty(requested) {
                return ["no translation for locale " + r + "; used default_locale " + locale]
            }
            return ["no locale given; used default_locale " + locale]
        }
    }

}
