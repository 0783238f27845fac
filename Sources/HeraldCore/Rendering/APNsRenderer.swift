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
    /// Notes for Render's `warnings` (e.g. a locale fallback).
    public var warnings: [String]

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
/// - Keys are merged in byte order; objects merge recursively (so
///   `{"aps":{"alert":{"action-loc-key":"PLAY"}}}` adds to the alert
///   dictionary); `null` deletes a key; other values replace.
/// - Skygear style: a top-level override key that is an `aps` dictionary key
///   (`alert`, `badge`, `sound`, `thread-id`, `category`, `content-available`,
///   `mutable-content`, `target-content-id`, `interruption-level`,
///   `relevance-score`, `filter-criteria`) is merged into `aps`, so
///   `{"alert":{"action-loc-key":"PLAY"},"badge":5}` works as in Skygear.
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
        var warnings: [String] = []
        let (tree, resolved) = alertTree(message, locale: locale, warnings: &warnings)
        let payload = try encode(tree, locale: resolved, translated: message.content.isTranslated)
        let headers = makeHeaders(
            pushType: .alert, topic: message.bundleID, priority: message.priority.apnsPriority,
            expiration: .from(ttl: message.ttl, sendTime: sendTime),
            collapseID: message.collapseID, apnsID: apnsID)
        if deviceToken == nil { warnings.append("no device_token given; the path shows a placeholder") }
        return APNsRendering(path: path(deviceToken), headers: headers, payload: payload, resolvedLocale: resolved, warnings: warnings)
    }

    /// Renders the context-aware handoff (background push) for one device.
    public static func renderHandoff(
        _ message: PushMessage,
        locale: String?,
        deviceToken: String?,
        apnsID: String,
        sendTime: Timestamp,
        windowEnd: Timestamp
    ) throws(RenderError) -> APNsRendering {
        guard message.isEnabled(on: .ios) else { throw .disabled(.ios) }
        var warnings: [String] = []
        let (alert, resolved) = alertTree(message, locale: locale, warnings: &warnings)
        let tree = handoffTree(alert, windowEnd: windowEnd)
        let payload = try encode(tree, locale: resolved, translated: message.content.isTranslated)
        var expiration = APNsExpiration.from(ttl: message.ttl, sendTime: sendTime)
        if expiration.rawValue != 0 { expiration.rawValue = min(expiration.rawValue, windowEnd.ceilingSeconds) }
        let headers = makeHeaders(
            pushType: .background, topic: message.bundleID, priority: .considerDevicePower,
            expiration: expiration, collapseID: nil, apnsID: apnsID)
        return APNsRendering(path: path(deviceToken), headers: headers, payload: payload, resolvedLocale: resolved, warnings: warnings)
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
        return APNsRendering(path: path(deviceToken), headers: headers, payload: w.bytes, resolvedLocale: nil, warnings: [])
    }

    /// Renders the payload for every locale of the message (one render when
    /// nothing is translated) and reports each one over 4096 bytes — for the
    /// alert push and, when `handoffWindowEnd` is given, for the handoff.
    public static func payloadSizeViolations(_ message: PushMessage, handoffWindowEnd: Timestamp?) -> [FieldViolation] {
        guard message.isEnabled(on: .ios) else { return [] }
        let locales: [String?] = message.content.isTranslated ? message.content.locales.map { $0 } : [nil]
        var out: [FieldViolation] = []
        var ignored: [String] = []
        for locale in locales {
            let (tree, resolved) = alertTree(message, locale: locale, warnings: &ignored)
            do {
                _ = try encode(tree, locale: resolved, translated: locale != nil)
                if let end = handoffWindowEnd {
                    _ = try encode(handoffTree(tree, windowEnd: end), locale: resolved, translated: locale != nil, what: "APNs handoff payload")
                }
            } catch {
                if case .invalid(let e) = error { out += e.violations }
            }
        }
        return out
    }

    // MARK: Building

    static func path(_ token: String?) -> String {
        guard let token, !token.isEmpty else { return "/3/device/" + placeholderToken }
        return "/3/device/" + (hasUppercase(token) ? token.lowercased() : token)
    }

    static func hasUppercase(_ s: String) -> Bool {
        withBytes(s) { p in
            for c in p where c >= 0x41 && c <= 0x5A { return true }
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

    /// Resolves the locale the way Render and delivery do, adding a warning
    /// when it falls back. Returns the translation key to use.
    static func resolveLocale(_ content: NotificationContent, requested: String?, warnings: inout [String]) -> String? {
        guard content.isTranslated else { return nonEmpty(content.defaultLocale) }
        let available = (content.title?.translations ?? content.body?.translations ?? content.subtitle?.translations)?.keys
        guard let available,
              let (locale, match) = LocaleResolver.resolve(requested: nonEmpty(requested), available: available, defaultLocale: nonEmpty(content.defaultLocale))
        else { return nonEmpty(content.defaultLocale) }
        switch match {
        case .exact:
            break
        case .language, .sameLanguage:
            warnings.append("no translation for locale " + (requested ?? "") + "; used " + locale)
        case .defaultLocale:
            if let r = nonEmpty(requested) {
                warnings.append("no translation for locale " + r + "; used default_locale " + locale)
            } else {
                warnings.append("no locale given; used default_locale " + locale)
            }
        }
        return locale
    }

    static func alertTree(_ m: PushMessage, locale: String?, warnings: inout [String]) -> (OrderedObject, String?) {
        let c = m.content
        let resolved = resolveLocale(c, requested: locale, warnings: &warnings)

        var alert = OrderedObject(capacity: 3)
        if let t = nonEmpty(c.title?.text(in: resolved)) { alert.append("title", .string(t)) }
        if let s = nonEmpty(c.subtitle?.text(in: resolved)) { alert.append("subtitle", .string(s)) }
        if let b = nonEmpty(c.body?.text(in: resolved)) { alert.append("body", .string(b)) }

        let image = nonEmpty(c.imageURL)
        var aps = OrderedObject(capacity: 8)
        aps.append("alert", alert)
        if let b = c.badge { aps.append("badge", .number(Double(b))) }
        if let s = nonEmpty(c.sound) { aps.append("sound", .string(s)) }
        if let t = nonEmpty(c.threadID) { aps.append("thread-id", .string(t)) }
        if let k = nonEmpty(c.category) { aps.append("category", .string(k)) }
        if image != nil { aps.append("mutable-content", .number(1)) }

        var root = OrderedObject(capacity: c.userInfo.count + 3 + (m.ios?.count ?? 0))
        root.append("aps", aps)
        for (k, v) in JSONWriter.sortedPairs(c.userInfo) { root.append(k, v) }
        root.append("ctx_idempotency_key", .string(m.idempotencyKey))
        if let image { root.append("ctx_image_url", .string(image)) }

        if let overrides = m.ios, !overrides.isEmpty {
            for (key, value) in JSONWriter.sortedPairs(overrides) {
                if key == "enabled" { continue }
                if isAPSKey(key) {
                    mergeIntoAPS(&root, key: key, value: value)
                } else {
                    root.merge(key: key, value: value)
                }
            }
        }
        return (root, resolved)
    }

    private static func mergeIntoAPS(_ root: inout OrderedObject, key: String, value: JSONValue) {
        guard let i = root.index(of: "aps"), case .object(var aps) = root.entries[i].node else {
            root.merge(key: "aps", value: .object([key: value]))
            return
        }
        root.entries[i].node = .leaf(.null)
        aps.merge(key: key, value: value)
        root.entries[i].node = .object(aps)
    }

    static func handoffTree(_ alert: OrderedObject, windowEnd: Timestamp) -> OrderedObject {
        var rest = alert
        let aps = rest.remove("aps")
        var out = OrderedObject(capacity: rest.entries.count + 3)
        var bg = OrderedObject(capacity: 1)
        bg.append("content-available", .number(1))
        out.append("aps", bg)
        if let aps { out.entries.append(.init(key: "ctx_aps", node: aps)) }
        out.entries.append(contentsOf: rest.entries)
        out.append("ctx_window_end", .string(RFC3339.format(windowEnd)))
        return out
    }

    static func encode(_ tree: OrderedObject, locale: String?, translated: Bool, what: String = "APNs payload") throws(RenderError) -> [UInt8] {
        var w = JSONWriter(capacity: 1024)
        do {
            try tree.write(to: &w)
        } catch {
            throw .invalid(ValidationError([FieldViolation(field: "ios", reason: "NaN and infinity are not valid JSON numbers")]))
        }
        if w.bytes.count > maximumPayloadBytes {
            let which = translated ? " for locale \(locale ?? "")" : ""
            throw .invalid(ValidationError([FieldViolation(
                field: "content",
                reason: "\(what)\(which) is \(w.bytes.count) bytes, over APNs' \(maximumPayloadBytes)-byte limit")]))
        }
        return w.bytes
    }
}
