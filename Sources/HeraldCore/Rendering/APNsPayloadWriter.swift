import HeraldPrimitives

/// Writes APNs payloads straight into a ``JSONWriter``, merging the `ios`
/// overrides on the fly (no intermediate tree: this is the hot path).
///
/// The merge rules are those documented on ``APNsRenderer``: the override is
/// split into a root-level patch and an `aps`-level patch (`ios.aps`
/// deep-merged with the Skygear-style top-level `aps` keys, which win);
/// a patched key keeps its place, objects merge recursively, `null` deletes,
/// and new keys follow the existing ones in byte order.
///
/// The message is passed to each method (borrowed) rather than stored, so
/// rendering never copies it.
struct APNsPayloadWriter {
    let locale: String?
    let rootPatch: JSONObject
    let apsPatch: JSONObject

    init(ios: JSONObject?, locale: String?) {
        self.locale = locale
        (rootPatch, apsPatch) = Self.split(ios)
    }

    /// Splits the `ios` override into root and `aps` patches; drops `enabled`.
    static func split(_ ios: JSONObject?) -> (root: JSONObject, aps: JSONObject) {
        guard let ios, !ios.isEmpty else { return ([:], [:]) }
        var simple = true
        for (k, _) in ios where !isLiteral(k, "aps") {
            simple = false
            break
        }
        if simple {
            for (k, v) in ios where isLiteral(k, "aps") { return ([:], v.objectValue ?? [:]) }
            return ([:], [:])
        }
        var root: JSONObject = [:]
        var aps = ios["aps"]?.objectValue ?? [:]
        for (k, v) in ios {
            if isLiteral(k, "aps") || isLiteral(k, "enabled") { continue }
            if APNsRenderer.isAPSKey(k) {
                if case .object(let p) = v, case .object(let b)? = aps[k] {
                    aps[k] = .object(OrderedObject.mergeDictionaries(b, p))
                } else {
                    aps[k] = v
                }
            } else {
                root[k] = v
            }
        }
        return (root, aps)
    }

    // MARK: Alert payload

    /// `{"aps":{…}, user_info…, "ctx_idempotency_key":…, "ctx_image_url":…, extras…}`
    func writeAlertPayload(_ w: inout JSONWriter, _ message: PushMessage) throws(JSONEncodingError) {
        w.writeRaw("{\"aps\":")
        try writeAPS(&w, message.content)
        try writeRootTail(&w, message)
        w.writeByte(UInt8(ascii: "}"))
    }

    /// The handoff: `{"aps":{"content-available":1},"ctx_aps":{…}, …, "ctx_window_end":…}`
    func writeHandoffPayload(
        _ w: inout JSONWriter, _ message: PushMessage, windowEnd: Timestamp, quiet: [QuietSpan] = []
    ) throws(JSONEncodingError) {
        w.writeRaw("{\"aps\":{\"content-available\":1},\"ctx_aps\":")
        try writeAPS(&w, message.content)
        try writeRootTail(&w, message)
        w.writeRaw(",\"ctx_window_end\":")
        w.writeString(RFC3339.format(windowEnd))
        if !quiet.isEmpty {
            w.writeRaw(",\"ctx_quiet\":[")
            for (index, span) in quiet.enumerated() {
                if index > 0 { w.writeByte(UInt8(ascii: ",")) }
                w.writeByte(UInt8(ascii: "["))
                w.writeInteger(span.startSeconds)
                w.writeByte(UInt8(ascii: ","))
                w.writeInteger(span.endSeconds)
                w.writeByte(UInt8(ascii: "]"))
            }
            w.writeByte(UInt8(ascii: "]"))
        }
        w.writeByte(UInt8(ascii: "}"))
    }

    /// The root members after `aps`, each preceded by a comma.
    func writeRootTail(_ w: inout JSONWriter, _ message: PushMessage) throws(JSONEncodingError) {
        let patched = !rootPatch.isEmpty
        if !message.content.userInfo.isEmpty {
            for (k, v) in message.content.userInfo {
                if patched, let p = rootPatch[k] {
                    try Self.writePatched(&w, key: k, base: v, patch: p)
                } else {
                    w.writeKey(k, first: false)
                    try w.write(v)
                }
            }
        }
        w.writeRaw(",\"ctx_idempotency_key\":")
        w.writeString(message.idempotencyKey)
        if let image = nonEmpty(message.content.imageURL) {
            w.writeRaw(",\"ctx_image_url\":")
            w.writeString(image)
        }
        if patched {
            for (k, v) in rootPatch where message.content.userInfo[k] == nil {
                if case .null = v { continue }
                w.writeByte(UInt8(ascii: ","))
                w.writeString(k)
                w.writeByte(UInt8(ascii: ":"))
                try w.write(v)
            }
        }
    }

    /// Writes `,"key":value` for a base value under a patch.
    static func writePatched(_ w: inout JSONWriter, key: String, base: JSONValue, patch: JSONValue) throws(JSONEncodingError) {
        if case .null = patch { return }
        w.writeByte(UInt8(ascii: ","))
        w.writeString(key)
        w.writeByte(UInt8(ascii: ":"))
        if case .object(let b) = base, case .object(let p) = patch {
            try w.write(.object(OrderedObject.mergeDictionaries(b, p)))
        } else {
            try w.write(patch)
        }
    }

    // MARK: aps

    /// The `aps` keys with a fixed place (the rest of a patch follows them).
    @inline(__always)
    static func isAPSSlot(_ k: String) -> Bool {
        isLiteral(k, "alert") || isLiteral(k, "badge") || isLiteral(k, "sound") || isLiteral(k, "thread-id")
            || isLiteral(k, "category") || isLiteral(k, "mutable-content")
    }

    /// The alert keys with a fixed place.
    @inline(__always)
    static func isAlertSlot(_ k: String) -> Bool {
        isLiteral(k, "title") || isLiteral(k, "subtitle") || isLiteral(k, "body")
    }

    /// Writes the patch members that have no fixed place (not `null`), in
    /// byte order, each preceded by a comma unless first.
    @inline(__always)
    static func writeExtras(
        _ w: inout JSONWriter, _ first: inout Bool, _ patch: JSONObject, isSlot: (String) -> Bool
    ) throws(JSONEncodingError) {
        for (k, v) in patch {
            if isSlot(k) { continue }
            if case .null = v { continue }
            w.writeKey(k, first: first)
            first = false
            try w.write(v)
        }
    }

    /// The `aps` dictionary: alert, badge, sound, thread-id, category,
    /// mutable-content, then new patch keys in byte order.
    func writeAPS(_ w: inout JSONWriter, _ c: borrowing NotificationContent) throws(JSONEncodingError) {
        var alertP: JSONValue?, badgeP: JSONValue?, soundP: JSONValue?
        var threadP: JSONValue?, categoryP: JSONValue?, mutableP: JSONValue?
        for (k, v) in apsPatch {
            if isLiteral(k, "alert") {
                alertP = v
            } else if isLiteral(k, "badge") {
                badgeP = v
            } else if isLiteral(k, "sound") {
                soundP = v
            } else if isLiteral(k, "thread-id") {
                threadP = v
            } else if isLiteral(k, "category") {
                categoryP = v
            } else if isLiteral(k, "mutable-content") {
                mutableP = v
            }
        }
        var first = true
        w.writeByte(UInt8(ascii: "{"))

        // alert
        switch alertP {
        case nil:
            Self.key(&w, &first, "\"alert\":")
            writeAlert(&w, c)
        case .null?:
            break
        case .object(let p)?:
            Self.key(&w, &first, "\"alert\":")
            try writeAlert(&w, c, patch: p)
        case let v?:
            Self.key(&w, &first, "\"alert\":")
            try w.write(v)
        }
        if let v = badgeP {
            try Self.member(&w, &first, "\"badge\":", v)
        } else if let b = c.badge {
            Self.key(&w, &first, "\"badge\":")
            w.writeInteger(Int64(b))
        }
        try Self.member(&w, &first, "\"sound\":", patch: soundP, c.sound)
        try Self.member(&w, &first, "\"thread-id\":", patch: threadP, c.threadID)
        try Self.member(&w, &first, "\"category\":", patch: categoryP, c.category)
        if let v = mutableP {
            try Self.member(&w, &first, "\"mutable-content\":", v)
        } else if nonEmpty(c.imageURL) != nil {
            Self.key(&w, &first, "\"mutable-content\":")
            w.writeByte(UInt8(ascii: "1"))
        }
        if !apsPatch.isEmpty {
            try Self.writeExtras(&w, &first, apsPatch, isSlot: Self.isAPSSlot)
        }
        w.writeByte(UInt8(ascii: "}"))
    }

    /// The alert dictionary: title, subtitle, body in the resolved locale,
    /// then new patch keys in byte order.
    func writeAlert(_ w: inout JSONWriter, _ c: borrowing NotificationContent, patch: JSONObject) throws(JSONEncodingError) {
        var titleP: JSONValue?, subtitleP: JSONValue?, bodyP: JSONValue?
        for (k, v) in patch {
            if isLiteral(k, "title") {
                titleP = v
            } else if isLiteral(k, "subtitle") {
                subtitleP = v
            } else if isLiteral(k, "body") {
                bodyP = v
            }
        }
        var first = true
        w.writeByte(UInt8(ascii: "{"))
        try Self.member(&w, &first, "\"title\":", patch: titleP, c.title?.text(in: locale))
        try Self.member(&w, &first, "\"subtitle\":", patch: subtitleP, c.subtitle?.text(in: locale))
        try Self.member(&w, &first, "\"body\":", patch: bodyP, c.body?.text(in: locale))
        if !patch.isEmpty {
            try Self.writeExtras(&w, &first, patch, isSlot: Self.isAlertSlot)
        }
        w.writeByte(UInt8(ascii: "}"))
    }

    /// Writes the alert without a patch (cannot fail: only strings).
    func writeAlert(_ w: inout JSONWriter, _ c: borrowing NotificationContent) {
        try? writeAlert(&w, c, patch: [:])
    }

    @inline(__always)
    static func key(_ w: inout JSONWriter, _ first: inout Bool, _ key: StaticString) {
        w.writeRaw(key, comma: !first)
        first = false
    }

    /// Writes `"key":value` unless the value is `null` (a deleting patch).
    @inline(__always)
    static func member(_ w: inout JSONWriter, _ first: inout Bool, _ k: StaticString, _ v: JSONValue) throws(JSONEncodingError) {
        if case .null = v { return }
        key(&w, &first, k)
        if case .string(let s) = v {
            w.writeString(s)
        } else {
            try w.write(v)
        }
    }

    /// Writes the patch value when there is one (`null` deletes), else the
    /// message's string when set and non-empty.
    @inline(__always)
    static func member(
        _ w: inout JSONWriter, _ first: inout Bool, _ k: StaticString, patch: JSONValue?, _ value: String?
    ) throws(JSONEncodingError) {
        if let patch {
            try member(&w, &first, k, patch)
        } else if let s = value, !s.isEmpty {
            key(&w, &first, k)
            w.writeString(s)
        }
    }
}
