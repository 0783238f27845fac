public import HeraldPrimitives

/// Checks requests against SPEC §3–§5 and applies defaults.
///
/// Every rule is checked and every violation collected, so one error lists
/// every problem. Field paths use the API's (proto) names.
public enum Validator {
    /// Byte limits from the API.
    public enum Limits {
        /// `user_id`, bytes.
        public static let userID = 256
        /// `campaign_id`, bytes.
        public static let campaignID = 128
        /// `idempotency_key`, bytes.
        public static let idempotencyKey = 128
        /// `collapse_id`, bytes (APNs' limit).
        public static let collapseID = 64
        /// `bundle_id`, bytes.
        public static let bundleID = 255
        /// `content.image_url`, bytes.
        public static let imageURL = 2048
        /// Fewest hex digits in an APNs device token (32 bytes).
        public static let apnsTokenHexMin = 64
        /// Most hex digits in an APNs device token (100 bytes).
        public static let apnsTokenHexMax = 200
        /// Longest FCM registration token, bytes.
        public static let fcmToken = 4096
        /// Most keys in one JSON object of `content.user_info`, `ios` or
        /// `android` (at any depth). A 4096-byte APNs payload holds at most
        /// 819 members (`"":0,` is five bytes), so more cannot be sent.
        public static let objectKeys = 1_000
        /// Most items in one JSON list there: 4096 bytes hold at most 2047.
        public static let listItems = 2_048
        /// Most locales in one `LocalizedText`'s translations.
        public static let localesPerText = 200
        /// Longest locale tag, bytes (BCP 47's practical maximum).
        public static let localeTagBytes = 35
    }

    // MARK: Entry points

    /// Validates a Render request's message (not the payload size: that is
    /// the renderer's job, because it depends on the rendered locale).
    ///
    /// - Parameter generateIdempotencyKey: called only when the request has
    ///   no key (e.g. `{ UUID().uuidString.lowercased() }`).
    public static func validate(
        _ input: RenderInput,
        generateIdempotencyKey: () -> String
    ) throws(ValidationError) -> PushMessage {
        var v: [FieldViolation] = []
        let m = validateMessage(input.message, generateIdempotencyKey: generateIdempotencyKey, into: &v)
        if let locale = nonEmpty(input.locale), !LocaleResolver.isWellFormed(locale) {
            v.append(.init(field: "locale", reason: ErrorText.quote(locale) + " is not a locale tag"))
        }
        if let token = nonEmpty(input.deviceToken), let platform = input.message.platform {
            if let why = deviceTokenProblem(token, platform: platform) {
                v.append(.init(field: "device_token", reason: why))
            }
        }
        guard v.isEmpty, let m else { throw ValidationError(v) }
        return m
    }

    /// Validates a Schedule request, resolves its window, its delivery method
    /// (A/B split when unspecified) and its plan, and checks the APNs payload
    /// size of every locale (and of the handoff push for context-aware
    /// delivery).
    public static func validate(
        _ input: ScheduleInput,
        now: Timestamp,
        split: ABSplit = .default,
        graceSeconds: Int64 = DeliveryPolicy.defaultGraceSeconds,
        generateIdempotencyKey: () -> String
    ) throws(ValidationError) -> ValidatedSchedule {
        var v: [FieldViolation] = []
        let msg = validateMessage(input.message, generateIdempotencyKey: generateIdempotencyKey, into: &v)
        checkRequired(input.userID, "user_id", max: Limits.userID, into: &v)
        checkRequired(input.campaignID, "campaign_id", max: Limits.campaignID, into: &v)
        let window = resolveWindow(input, now: now, into: &v)
        var localSendTime: LocalSendTime?
        if let text = input.localSendTime {
            localSendTime = LocalSendTime(parsing: text)
            if localSendTime == nil, let why = LocalSendTime.problem(text) { v.append(.init(field: "local_send_time", reason: why)) }
        }

        guard v.isEmpty, var msg, let window else { throw ValidationError(v) }
        msg.localSendTime = localSendTime
        msg.transactional = input.transactional
        let (method, abTest) = split.resolve(requested: input.deliveryMethod, bundleID: msg.bundleID, userID: input.userID)
        // The plan is the delivery policy's (DeliveryPolicy.plan); the
        // validator checks the pushes it implies (the hand-off's size).
        let plan = DeliveryPolicy.plan(method: method, window: window, now: now, graceSeconds: graceSeconds)
        if msg.platform == .ios {
            v += APNsRenderer.payloadSizeViolations(msg, handoffWindowEnd: plan.firstPush == .background ? window.end : nil)
            guard v.isEmpty else { throw ValidationError(v) }
        }
        return ValidatedSchedule(
            message: msg, userID: input.userID, campaignID: input.campaignID,
            method: method, abTest: abTest, window: window, plan: plan,
            idempotencyKeyGenerated: nonEmpty(input.message.idempotencyKey) == nil
        )
    }

    /// Why an APNs device token (hex, even length, 64–200 digits) or FCM
    /// registration token (opaque: 1–4096 letters, digits, `:`, `-`, `_`)
    /// is invalid, or nil when valid.
    public static func deviceTokenProblem(_ token: String, platform: Platform) -> String? {
        let u = token.utf8
        switch platform {
        case .ios:
            let allHex = withBytes(token) { p in
                var i = 0
                if let base = p.baseAddress {
                    // Eight bytes a step: every byte in 0-9, A-F or a-f.
                    let raw = UnsafeRawPointer(base)
                    let ones: UInt64 = 0x0101_0101_0101_0101
                    let highs: UInt64 = ones &* 0x80
                    while i + 8 <= p.count {
                        let w = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                        if w & highs != 0 { return false }
                        // Per byte (all < 0x80, so no carries between bytes):
                        // digit: w + (0x80 - 0x30) has the high bit, w + (0x80 - 0x3A) has not.
                        let digit = (w &+ ones &* (0x80 - 0x30)) & ~(w &+ ones &* (0x80 - 0x3A))
                        let l = w | (ones &* 0x20)
                        let letter = (l &+ ones &* (0x80 - 0x61)) & ~(l &+ ones &* (0x80 - 0x67))
                        if (digit | letter) & highs != highs { return false }
                        i += 8
                    }
                }
                while i < p.count {
                    let c = p[i]
                    let isHex = (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66)
                    if !isHex { return false }
                    i += 1
                }
                return true
            }
            if !allHex { return "an APNs device token must be hexadecimal" }
            if u.count % 2 != 0 { return "an APNs device token must have an even number of hex digits, got \(u.count)" }
            if u.count < Limits.apnsTokenHexMin || u.count > Limits.apnsTokenHexMax {
                return "an APNs device token must have \(Limits.apnsTokenHexMin) to \(Limits.apnsTokenHexMax) hex digits, got \(u.count)"
            }
            return nil
        case .android:
            if u.isEmpty { return "required" }
            if u.count > Limits.fcmToken { return "must be at most \(Limits.fcmToken) bytes, got \(u.count)" }
            for c in u where !isFCMTokenByte(c) {
                return "an FCM registration token is letters, digits, ':', '-' and '_' only"
            }
            return nil
        }
    }

    /// A byte of an FCM registration token: ASCII letters, digits, `:`, `-`, `_`.
    @inline(__always)
    static func isFCMTokenByte(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7A) || c == 0x3A || c == 0x2D || c == 0x5F
    }

    /// Why a bundle id is not a reverse-DNS app id (`com.example.app`: at
    /// least two dot-separated labels of ASCII letters, digits and `-`), or
    /// nil when valid.
    /// Why `value` cannot be an HTTP/2 header value as it is (it becomes
    /// `apns-collapse-id`), or nil: RFC 9113 §8.2.1 makes a field with a
    /// control character (NUL, CR and LF among them) or with white space at
    /// either end malformed, and a receiver resets the stream, so the
    /// message could never be delivered.
    public static func headerValueProblem(_ value: String) -> String? {
        let u = value.utf8
        if let bad = u.first(where: { $0 < 0x20 || $0 == 0x7F }) {
            return "must not contain control characters (found 0x\(String(bad, radix: 16, uppercase: true)))"
        }
        if u.first == 0x20 || u.last == 0x20 { return "must not begin or end with a space" }
        return nil
    }

    public static func bundleIDProblem(_ id: String) -> String? {
        let n = id.utf8.count
        if n == 0 { return "required" }
        if n > Limits.bundleID { return "must be at most \(Limits.bundleID) bytes, got \(n)" }
        return withBytes(id) { u in bundleIDShapeProblem(u) }
    }

    private static func bundleIDShapeProblem(_ u: UnsafeBufferPointer<UInt8>) -> String? {
        var labels = 1
        var labelLength = 0
        for c in u {
            if c == UInt8(ascii: ".") {
                if labelLength == 0 { return "must be a reverse-DNS id like com.example.app (empty label)" }
                labels += 1
                labelLength = 0
                continue
            }
            let ok = (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7A) || c == UInt8(ascii: "-")
            if !ok { return "must be a reverse-DNS id like com.example.app (only letters, digits, - and .)" }
            labelLength += 1
        }
        if labelLength == 0 { return "must be a reverse-DNS id like com.example.app (empty label)" }
        if labels < 2 { return "must be a reverse-DNS id like com.example.app (at least two labels)" }
        return nil
    }

    // MARK: Message

    /// Validates the shared message fields, appending violations; returns
    /// the message with defaults applied when the fields it needs are usable.
    public static func validateMessage(
        _ m: MessageInput,
        generateIdempotencyKey: () -> String,
        into v: inout [FieldViolation]
    ) -> PushMessage? {
        if let why = bundleIDProblem(m.bundleID) { v.append(.init(field: "bundle_id", reason: why)) }
        if m.platform == nil { v.append(.init(field: "platform", reason: "required")) }
        if let k = nonEmpty(m.idempotencyKey) {
            checkMax(k, "idempotency_key", max: Limits.idempotencyKey, into: &v)
        }
        if let c = nonEmpty(m.collapseID) {
            checkMax(c, "collapse_id", max: Limits.collapseID, into: &v)
            if let why = headerValueProblem(c) { v.append(.init(field: "collapse_id", reason: why)) }
        }
        if let ttl = m.ttlSeconds, ttl > TimeToLive.maximum.rawValue {
            v.append(.init(field: "ttl_seconds", reason: "must be at most \(TimeToLive.maximum.rawValue) (4 weeks), got \(ttl)"))
        }
        checkOverrides(m.ios, "ios", into: &v)
        checkOverrides(m.android, "android", into: &v)
        if let c = m.content {
            checkContent(c, into: &v)
        } else {
            v.append(.init(field: "content", reason: "required"))
        }
        guard let platform = m.platform, let content = m.content else { return nil }
        return PushMessage(
            bundleID: m.bundleID,
            platform: platform,
            content: content,
            priority: m.priority ?? .normal,
            ttl: m.ttlSeconds.map(TimeToLive.init(rawValue:)) ?? .default,
            collapseID: m.collapseID,
            ios: m.ios,
            android: m.android,
            idempotencyKey: nonEmpty(m.idempotencyKey) ?? generateIdempotencyKey()
        )
    }

    static func checkOverrides(_ o: JSONObject?, _ field: String, into v: inout [FieldViolation]) {
        guard let o, !o.isEmpty else { return }
        var nonFinite = false
        for (k, value) in o {
            if isLiteral(k, "enabled"), value.boolValue == nil {
                v.append(.init(field: field + ".enabled", reason: "must be a boolean"))
            } else if isLiteral(k, "aps"), value.objectValue == nil {
                v.append(.init(field: field + ".aps", reason: "must be an object"))
            } else if field == "ios", isHeraldKey(k) {
                v.append(.init(field: field + "." + ErrorText.truncated(k), reason: "reserved key: keys starting ctx_ belong to Herald"))
            }
            if value.containsNonFiniteNumber { nonFinite = true }
        }
        if nonFinite, let p = JSONValue.object(o).firstNonFiniteNumberPath(prefix: field) {
            v.append(.init(field: p, reason: "NaN and infinity are not valid JSON numbers"))
        }
    }

    /// The locale set of the first translated field, for comparing the others.
    private struct LocaleReference {
        var field: String
        var tags: SortedMap<String>
    }

    private static func checkLocalized(
        _ text: LocalizedText?, _ name: String, required: Bool,
        reference: inout LocaleReference?, into v: inout [FieldViolation]
    ) {
        switch text {
        case nil:
            if required { v.append(.init(field: name, reason: "required")) }
        case .text(let s)?:
            if s.isEmpty && required { v.append(.init(field: name, reason: "required")) }
        case .translations(let t)?:
            // Tag shape is invariant under tag equality, so fields whose
            // locale set equals the first one's need not re-check it.
            let matchesReference = reference.map { sameLocaleSet(t, $0.tags) } ?? false
            checkTranslations(t, name, checkTagShape: !matchesReference, into: &v)
            if let ref = reference {
                if !matchesReference {
                    v.append(.init(field: name, reason: "translations name \(localeSet(t)) but \(ref.field) names \(localeSet(ref.tags))"))
                }
            } else {
                reference = LocaleReference(field: name, tags: t)
            }
        }
    }

    static func checkContent(_ c: NotificationContent, into v: inout [FieldViolation]) {
        // The common valid message passes a cheap check that implies every
        // rule below holds; anything else takes the full path, which
        // collects the violations.
        if contentIsPlainlyValid(c) { return }
        var reference: LocaleReference?
        checkLocalized(c.title, "content.title", required: true, reference: &reference, into: &v)
        checkLocalized(c.subtitle, "content.subtitle", required: false, reference: &reference, into: &v)
        checkLocalized(c.body, "content.body", required: true, reference: &reference, into: &v)
        if let ref = reference {
            if let d = nonEmpty(c.defaultLocale) {
                if ref.tags[d] == nil && !ref.tags.keys.contains(where: { LocaleResolver.tagsEqual($0, d) }) {
                    v.append(.init(field: "content.default_locale", reason: ErrorText.quote(d) + " is not one of the translated locales \(localeSet(ref.tags))"))
                }
            } else {
                v.append(.init(field: "content.default_locale", reason: "required when a field is translated"))
            }
        } else if let d = nonEmpty(c.defaultLocale), !LocaleResolver.isWellFormed(d) {
            v.append(.init(field: "content.default_locale", reason: ErrorText.quote(d) + " is not a locale tag"))
        }
        if let b = c.badge, b < 0 {
            v.append(.init(field: "content.badge", reason: "must be ≥ 0 (0 clears the badge), got \(b)"))
        }
        if let url = nonEmpty(c.imageURL), let why = imageURLProblem(url) {
            v.append(.init(field: "content.image_url", reason: why))
        }
        if !c.userInfo.isEmpty {
            var reserved = false
            var nonFinite = false
            for (k, value) in c.userInfo {
                if k == "aps" || isHeraldKey(k) { reserved = true }
                if value.containsNonFiniteNumber { nonFinite = true }
            }
            if reserved {
                for (k, _) in c.userInfo {
                    if k == "aps" {
                        v.append(.init(field: "content.user_info.aps", reason: "reserved key: aps belongs to APNs"))
                    } else if isHeraldKey(k) {
                        v.append(.init(field: "content.user_info." + ErrorText.truncated(k), reason: "reserved key: keys starting ctx_ belong to Herald"))
                    }
                }
            }
            if nonFinite, let p = JSONValue.object(c.userInfo).firstNonFiniteNumberPath(prefix: "content.user_info") {
                v.append(.init(field: p, reason: "NaN and infinity are not valid JSON numbers"))
            }
        }
    }

    /// Keys starting `ctx_` belong to Herald.
    static func isHeraldKey(_ k: String) -> Bool {
        withBytes(k) { u in
            u.count >= 4 && u[0] == UInt8(ascii: "c") && u[1] == UInt8(ascii: "t") && u[2] == UInt8(ascii: "x") && u[3] == UInt8(ascii: "_")
        }
    }

    static func checkTranslations(_ t: SortedMap<String>, _ name: String, checkTagShape: Bool = true, into v: inout [FieldViolation]) {
        if t.isEmpty {
            v.append(.init(field: name + ".translations", reason: "must name at least one locale"))
            return
        }
        for (tag, text) in t {
            if checkTagShape && !LocaleResolver.isWellFormed(tag) {
                v.append(.init(field: "\(name).translations[\(ErrorText.truncated(tag))]", reason: ErrorText.quote(tag) + " is not a locale tag"))
            }
            if text.isEmpty {
                v.append(.init(field: "\(name).translations[\(ErrorText.truncated(tag))]", reason: "empty text"))
            }
        }
        // Duplicates under tag equality (`en-US` and `en_us`): one pass over
        // the tags by their folded spelling (linear, however many locales).
        guard t.count > 1 else { return }
        var firstByFolded: [String: String] = [:]
        firstByFolded.reserveCapacity(t.count)
        for tag in t.keys {
            let folded = LocaleResolver.normalized(tag)
            if let other = firstByFolded[folded] {
                let pair = [other, tag].sorted().map(ErrorText.truncated)
                v.append(.init(field: name + ".translations", reason: "locales \(pair[0]) and \(pair[1]) are the same tag"))
            } else {
                firstByFolded[folded] = tag
            }
        }
    }

    /// Whether two translation maps name the same locales under tag
    /// equality: compared as sets of folded tags, so the cost is linear.
    static func sameLocaleSet(_ a: SortedMap<String>, _ b: SortedMap<String>) -> Bool {
        guard a.count == b.count else { return false }
        return foldedTags(a) == foldedTags(b)
    }

    private static func foldedTags(_ t: SortedMap<String>) -> Set<String> {
        var out = Set<String>(minimumCapacity: t.count)
        for tag in t.keys { out.insert(LocaleResolver.normalized(tag)) }
        return out
    }

    /// `{de,en}` for error messages, truncated: a request may name hundreds
    /// of locales.
    static func localeSet(_ t: SortedMap<String>) -> String {
        ErrorText.truncated("{" + t.keys.sorted().joined(separator: ",") + "}")
    }

    /// Why an image URL is unusable, or nil: it must be `https://host…`
    /// without spaces or control characters, at most 2048 bytes.
    public static func imageURLProblem(_ url: String) -> String? {
        let n = url.utf8.count
        if n > Limits.imageURL { return "must be at most \(Limits.imageURL) bytes, got \(n)" }
        return withBytes(url) { u -> String? in
            let scheme: StaticString = "https://"
            let k = scheme.utf8CodeUnitCount
            guard u.count > k else { return "must be an https URL" }
            let sp = scheme.utf8Start
            for i in 0..<k where (u[i] >= 0x41 && u[i] <= 0x5A ? u[i] | 0x20 : u[i]) != sp[i] {
                return "must be an https URL"
            }
            let f = u[k]
            if f == UInt8(ascii: "/") || f == UInt8(ascii: "?") || f == UInt8(ascii: "#") {
                return "must name a host"
            }
            for c in u where c <= 0x20 || c == 0x7F { return "must not contain spaces or control characters" }
            return nil
        }
    }
}
