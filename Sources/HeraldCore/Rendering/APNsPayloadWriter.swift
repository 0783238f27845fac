/// Writes APNs payloads straight into a ``JSONWriter``, merging the `ios`
/// overrides on the fly (no intermediate tree: this is the hot path).
///
/// The merge rules are those documented on ``APNsRenderer``: the override is
/// split into a root-level patch and an `aps`-level patch (`ios.aps`
/// deep-merged with the Skygear-style top-level `aps` keys, which win);
/// a patched key keeps its place, objects merge recursively, `null` deletes,
/// and new keys follow the existing ones in byte order.
struct APNsPayloadWriter {
    let message: PushMessage
    let locale: String?
    let rootPatch: [String: JSONValue]
    let apsPatch: [String: JSONValue]

    init(message: PushMessage, locale: String?) {
        self.message = message
        self.locale = locale
        (rootPatch, apsPatch) = Self.split(message.ios)
    }

    /// Splits the `ios` override into root and `aps` patches; drops `enabled`.
    static func split(_ ios: [String: JSONValue]?) -> (root: [String: JSONValue], aps: [String: JSONValue]) {
        guard let ios, !ios.isEmpty else { return ([:], [:]) }
        var simple = true
        for (k, _) in ios where k != "aps" {
            simple = false
            break
        }
        if simple { return ([:], ios["aps"]?.objectValue ?? [:]) }
        var root: [String: JSONValue] = [:]
        var aps = ios["aps"]?.objectValue ?? [:]
        for (k, v) in ios {
            if k == "aps" || k == "enabled" { continue }
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
    func writeAlertPayload(_ w: inout JSONWriter) throws(JSONEncodingError) {
        w.writeRaw("{\"aps\":")
        try writeAPS(&w)
        try writeRootTail(&w)
        w.writeByte(UInt8(ascii: "}"))
    }

    /// The handoff: `{"aps":{"content-available":1},"ctx_aps":{…}, …, "ctx_window_end":…}`
    func writeHandoffPayload(_ w: inout JSONWriter, windowEnd: Timestamp) throws(JSONEncodingError) {
        w.writeRaw("{\"aps\":{\"content-available\":1},\"ctx_aps\":")
        try writeAPS(&w)
        try writeRootTail(&w)
        w.writeRaw(",\"ctx_window_end\":")
        w.writeString(RFC3339.format(windowEnd))
        w.writeByte(UInt8(ascii: "}"))
    }

    /// The root members after `aps`, each preceded by a comma.
    func writeRootTail(_ w: inout JSONWriter) throws(JSONEncodingError) {
        let c = message.content
        let patched = !rootPatch.isEmpty
        if !c.userInfo.isEmpty {
            try JSONWriter.forEachSorted(c.userInfo) { (k, v) throws(JSONEncodingError) in
                if patched, let p = rootPatch[k] {
                    try Self.writePatched(&w, key: k, base: v, patch: p)
                } else {
                    w.writeByte(UInt8(ascii: ","))
                    w.writeString(k)
                    w.writeByte(UInt8(ascii: ":"))
                    try w.write(v)
                }
            }
        }
        w.writeRaw(",\"ctx_idempotency_key\":")
        w.writeString(message.idempotencyKey)
        if let image = nonEmpty(c.imageURL) {
            w.writeRaw(",\"ctx_image_url\":")
            w.writeString(image)
        }
        if patched {
            for (k, v) in JSONWriter.sortedPairs(rootPatch) where c.userInfo[k] == nil {
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

    /// The `aps` dictionary: alert, badge, sound, thread-id, category,
    /// mutable-content, then new patch keys in byte order.
    func writeAPS(_ w: inout JSONWriter) throws(JSONEncodingError) {
        let c = message.content
        var alertP: JSONValue?, badgeP: JSONValue?, soundP: JSONValue?
        var threadP: JSONValue?, categoryP: JSONValue?, mutableP: JSONValue?
        var extras: [(key: String, value: JSONValue)] = []
        for (k, v) in apsPatch {
            switch k {
            case "alert": alertP = v
            case "badge": badgeP = v
            case "sound": soundP = v
            case "thread-id": threadP = v
            case "category": categoryP = v
            case "mutable-content": mutableP = v
            default: if case .null = v {} else { extras.append((k, v)) }
            }
        }
        var first = true
        w.writeByte(UInt8(ascii: "{"))

        // alert
        switch alertP {
        case nil:
            Self.key(&w, &first, "\"alert\":")
            writeAlert(&w)
        case .null?:
            break
        case .object(let p)?:
            Self.key(&w, &first, "\"alert\":")
            try writeAlert(&w, patch: p)
        case let v?:
            Self.key(&w, &first, "\"alert\":")
            try w.write(v)
        }
        if let v = badgeP ?? c.badge.map({ .number(Double($0)) }) {
            try Self.member(&w, &first, "\"badge\":", v)
        }
        if let v = soundP ?? nonEmpty(c.sound).map(JSONValue.string) {
            try Self.member(&w, &first, "\"sound\":", v)
        }
        if let v = threadP ?? nonEmpty(c.threadID).map(JSONValue.string) {
            try Self.member(&w, &first, "\"thread-id\":", v)
        }
        if let v = categoryP ?? nonEmpty(c.category).map(JSONValue.string) {
            try Self.member(&w, &first, "\"category\":", v)
        }
        if let v = mutableP ?? (nonEmpty(c.imageURL) == nil ? JSONValue?.none : JSONValue.number(1)) {
            try Self.member(&w, &first, "\"mutable-content\":", v)
        }
        if !extras.isEmpty {
            JSONWriter.sortPairs(&extras)
            for (k, v) in extras {
                if !first { w.writeByte(UInt8(ascii: ",")) }
                first = false
                w.writeString(k)
                w.writeByte(UInt8(ascii: ":"))
                try w.write(v)
            }
        }
        w.writeByte(UInt8(ascii: "}"))
    }

    /// The alert dictionary: title, subtitle, body in the resolved locale,
    /// then new patch keys in byte order.
    func writeAlert(_ w: inout JSONWriter, patch: [String: JSONValue]) throws(JSONEncodingError) {
        let c = message.content
        var titleP: JSONValue?, subtitleP: JSONValue?, bodyP: JSONValue?
        var extras: [(key: String, value: JSONValue)] = []
        for (k, v) in patch {
            switch k {
            case "title": titleP = v
            case "subtitle": subtitleP = v
            case "body": bodyP = v
            default: if case .null = v {} else { extras.append((k, v)) }
            }
        }
        var first = true
        w.writeByte(UInt8(ascii: "{"))
        if let v = titleP ?? nonEmpty(c.title?.text(in: locale)).map(JSONValue.string) {
            try Self.member(&w, &first, "\"title\":", v)
        }
        if let v = subtitleP ?? nonEmpty(c.subtitle?.text(in: locale)).map(JSONValue.string) {
            try Self.member(&w, &first, "\"subtitle\":", v)
        }
        if let v = bodyP ?? nonEmpty(c.body?.text(in: locale)).map(JSONValue.string) {
            try Self.member(&w, &first, "\"body\":", v)
        }
        if !extras.isEmpty {
            JSONWriter.sortPairs(&extras)
            for (k, v) in extras {
                if !first { w.writeByte(UInt8(ascii: ",")) }
                first = false
                w.writeString(k)
                w.writeByte(UInt8(ascii: ":"))
                try w.write(v)
            }
        }
        w.writeByte(UInt8(ascii: "}"))
    }

    /// Writes the alert without a patch (cannot fail: only strings).
    func writeAlert(_ w: inout JSONWriter) {
        try? writeAlert(&w, patch: [:])
    }

    @inline(__always)
    static func key(_ w: inout JSONWriter, _ first: inout Bool, _ key: StaticString) {
        if !first { w.writeByte(UInt8(ascii: ",")) }
        first = false
        w.writeRaw(key)
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
}
