import CInterop
import HeraldCore
import HeraldPrimitives
import HeraldProtos

/// Turns protoc-c request structs into domain values, once, at the edge.
///
/// Problems the wire itself can have (invalid UTF-8, unknown enum numbers,
/// both halves of a LocalizedText) are collected as field violations, like
/// the core's, so one error lists everything.
struct RequestDecoder {
    private(set) var violations: [FieldViolation] = []

    /// Throws INVALID_ARGUMENT listing every violation collected so far.
    func finish() throws(ValidationError) {
        if !violations.isEmpty { throw ValidationError(violations) }
    }

    // Field paths are autoclosures: built only when a violation names them
    // (eagerly, every map entry and struct member would cost a heap string).

    mutating func string(_ pointer: UnsafeMutablePointer<CChar>?, _ field: @autoclosure () -> String) -> String {
        guard let pointer else { return "" }
        guard let value = String(validatingCString: pointer) else {
            violations.append(FieldViolation(field: field(), reason: "is not valid UTF-8"))
            return ""
        }
        return value
    }

    /// A locale tag, nil when empty: a violation names the field when it is
    /// longer than ``Validator/Limits/localeTagBytes`` (its shape is the
    /// validator's business).
    mutating func localeTag(_ pointer: UnsafeMutablePointer<CChar>?, _ field: @autoclosure () -> String) -> String? {
        guard let tag = optionalString(pointer, field()) else { return nil }
        if tag.utf8.count > Validator.Limits.localeTagBytes {
            violations.append(FieldViolation(
                field: field(),
                reason: "locale tag \(ErrorText.quote(tag)) is \(tag.utf8.count) bytes; the limit is \(Validator.Limits.localeTagBytes)"))
        }
        return tag
    }

    /// nil for the empty string (proto3's "not set").
    mutating func optionalString(_ pointer: UnsafeMutablePointer<CChar>?, _ field: @autoclosure () -> String) -> String? {
        let value = string(pointer, field())
        return value.isEmpty ? nil : value
    }

    mutating func platform(_ value: Herald__V1__Platform, _ field: String = "platform") -> Platform? {
        switch value {
        case HERALD__V1__PLATFORM__PLATFORM_UNSPECIFIED: return nil
        case HERALD__V1__PLATFORM__PLATFORM_IOS: return .ios
        case HERALD__V1__PLATFORM__PLATFORM_ANDROID: return .android
        default:
            violations.append(FieldViolation(field: field, reason: "unknown value \(value.rawValue)"))
            return nil
        }
    }

    mutating func priority(_ value: Herald__V1__Priority, _ field: String = "priority") -> Priority? {
        switch value {
        case HERALD__V1__PRIORITY__PRIORITY_UNSPECIFIED: return nil
        case HERALD__V1__PRIORITY__PRIORITY_LOW: return .low
        case HERALD__V1__PRIORITY__PRIORITY_NORMAL: return .normal
        case HERALD__V1__PRIORITY__PRIORITY_HIGH: return .high
        default:
            violations.append(FieldViolation(field: field, reason: "unknown value \(value.rawValue)"))
            return nil
        }
    }

    mutating func localizedText(_ pointer: UnsafeMutablePointer<Herald__V1__LocalizedText>?, _ field: @autoclosure () -> String) -> LocalizedText? {
        guard let text = pointer?.pointee else { return nil }
        let hasText = text.single_case == HERALD__V1__LOCALIZED_TEXT__SINGLE_TEXT
        let hasTranslations = text.n_translations > 0
        switch (hasText, hasTranslations) {
        case (false, false):
            return nil
        case (true, true):
            violations.append(FieldViolation(field: field(), reason: "set exactly one of text or translations, not both"))
            return nil
        case (true, false):
            return .text(string(text.text, "\(field()).text"))
        case (false, true):
            // Limits first: nothing is built for a request that cannot be valid.
            guard text.n_translations <= Validator.Limits.localesPerText else {
                violations.append(FieldViolation(
                    field: "\(field()).translations",
                    reason: "has \(text.n_translations) locales; the limit is \(Validator.Limits.localesPerText) locales per text"))
                return nil
            }
            // Straight into the map's storage: sorted (and a repeated
            // locale's last text kept) once, when complete.
            var pairs: [(key: String, value: String)] = []
            pairs.reserveCapacity(text.n_translations)
            Self.sortByKey(text.translations, text.n_translations) { $0.pointee.key }
            for index in 0..<text.n_translations {
                guard let entry = text.translations[index]?.pointee else { continue }
                let locale = localeTag(entry.key, "\(field()).translations") ?? ""
                pairs.append((locale, string(entry.value, "\(field()).translations[\(ErrorText.truncated(locale))]")))
            }
            return .translations(SortedMap(pairs))
        }
    }

    mutating func content(_ pointer: UnsafeMutablePointer<Herald__V1__Content>?) -> NotificationContent? {
        guard let content = pointer?.pointee else { return nil }
        return NotificationContent(
            title: localizedText(content.title, "content.title"),
            subtitle: localizedText(content.subtitle, "content.subtitle"),
            body: localizedText(content.body, "content.body"),
            defaultLocale: localeTag(content.default_locale, "content.default_locale"),
            sound: optionalString(content.sound, "content.sound"),
            badge: content.badge_value_case == HERALD__V1__CONTENT__BADGE_VALUE_BADGE ? content.badge : nil,
            userInfo: structObject(content.user_info, "content.user_info") ?? [:],
            threadID: optionalString(content.thread_id, "content.thread_id"),
            imageURL: optionalString(content.image_url, "content.image_url"),
            category: optionalString(content.category, "content.category")
        )
    }

    /// Sorts a parsed map's entry pointers in place (the unpacked request's
    /// own array) by key, stably, compared as C strings: `strcmp` orders by
    /// unsigned bytes, ``SortedMap``'s order, and the wire walk has rejected
    /// keys holding a NUL. The pairs are then decoded in order and
    /// ``SortedMap`` only checks them. Up to 16 entries, by insertion; larger
    /// maps are left to ``SortedMap``. An entry without a key stops the sort
    /// where it is (``SortedMap`` sorts what remains).
    @inline(__always)
    private static func sortByKey<Entry>(
        _ entries: UnsafeMutablePointer<UnsafeMutablePointer<Entry>?>?, _ count: Int,
        _ key: (UnsafeMutablePointer<Entry>) -> UnsafeMutablePointer<CChar>?
    ) {
        guard let entries, count > 1 && count <= 16 else { return }
        for i in 1..<count {
            guard let moving = entries[i], let k = key(moving) else { return }
            var j = i
            while j > 0, let previous = entries[j - 1], let p = key(previous), strcmp(k, p) < 0 {
                entries[j] = previous
                j -= 1
            }
            entries[j] = moving
        }
    }

    /// A `google.protobuf.Struct` as a JSON object; nil when absent.
    mutating func structObject(_ pointer: UnsafeMutablePointer<Google__Protobuf__Struct>?, _ field: @autoclosure () -> String) -> JSONObject? {
        guard let object = pointer?.pointee else { return nil }
        guard object.n_fields <= Validator.Limits.objectKeys else {
            violations.append(FieldViolation(
                field: field(), reason: "has \(object.n_fields) keys; the limit is \(Validator.Limits.objectKeys) keys per object"))
            return [:]
        }
        var members: [(key: String, value: JSONValue)] = []
        members.reserveCapacity(object.n_fields)
        Self.sortByKey(object.fields, object.n_fields) { $0.pointee.key }
        for index in 0..<object.n_fields {
            guard let entry = object.fields[index]?.pointee else { continue }
            let key = string(entry.key, field())
            members.append((key, value(entry.value, "\(field()).\(ErrorText.truncated(key))")))
        }
        return JSONObject(members)
    }

    private mutating func value(_ pointer: UnsafeMutablePointer<Google__Protobuf__Value>?, _ field: @autoclosure () -> String) -> JSONValue {
        guard let value = pointer?.pointee else { return .null }
        switch value.kind_case {
        case GOOGLE__PROTOBUF__VALUE__KIND_NUMBER_VALUE:
            guard value.number_value.isFinite else {
                violations.append(FieldViolation(field: field(), reason: "number is not finite (JSON has no NaN or Infinity)"))
                return .null
            }
            return .number(value.number_value)
        case GOOGLE__PROTOBUF__VALUE__KIND_STRING_VALUE: return .string(string(value.string_value, field()))
        case GOOGLE__PROTOBUF__VALUE__KIND_BOOL_VALUE: return .bool(value.bool_value != 0)
        case GOOGLE__PROTOBUF__VALUE__KIND_STRUCT_VALUE: return .object(structObject(value.struct_value, field()) ?? [:])
        case GOOGLE__PROTOBUF__VALUE__KIND_LIST_VALUE:
            guard let list = value.list_value?.pointee else { return .array([]) }
            guard list.n_values <= Validator.Limits.listItems else {
                violations.append(FieldViolation(
                    field: field(), reason: "has \(list.n_values) items; the limit is \(Validator.Limits.listItems) items per list"))
                return .array([])
            }
            var items: [JSONValue] = []
            items.reserveCapacity(list.n_values)
            for index in 0..<list.n_values { items.append(self.value(list.values[index], "\(field())[\(index)]")) }
            return .array(items)
        default:
            // null_value and a Value with no kind set both mean JSON null.
            return .null
        }
    }

    /// The message fields Render and Schedule share.
    mutating func messageInput(
        bundleID: UnsafeMutablePointer<CChar>?, platform: Herald__V1__Platform,
        content: UnsafeMutablePointer<Herald__V1__Content>?, priority: Herald__V1__Priority,
        ttlSeconds: UInt32?, collapseID: UnsafeMutablePointer<CChar>?,
        ios: UnsafeMutablePointer<Google__Protobuf__Struct>?, android: UnsafeMutablePointer<Google__Protobuf__Struct>?,
        idempotencyKey: UnsafeMutablePointer<CChar>?
    ) -> MessageInput {
        MessageInput(
            bundleID: string(bundleID, "bundle_id"),
            platform: self.platform(platform),
            content: self.content(content),
            priority: self.priority(priority),
            ttlSeconds: ttlSeconds,
            collapseID: optionalString(collapseID, "collapse_id"),
            ios: structObject(ios, "ios"),
            android: structObject(android, "android"),
            idempotencyKey: optionalString(idempotencyKey, "idempotency_key")
        )
    }
}

extension RequestDecoder {
    mutating func deliveryMethod(_ value: Herald__V1__DeliveryMethod) -> DeliveryMethod? {
        switch value {
        case HERALD__V1__DELIVERY_METHOD__DELIVERY_METHOD_UNSPECIFIED: return nil
        case HERALD__V1__DELIVERY_METHOD__DELIVERY_METHOD_CONTEXT_AWARE: return .contextAware
        case HERALD__V1__DELIVERY_METHOD__DELIVERY_METHOD_TRADITIONAL: return .traditional
        default:
            violations.append(FieldViolation(field: "delivery_method", reason: "unknown value \(value.rawValue)"))
            return nil
        }
    }

    mutating func environment(_ value: Herald__V1__ApnsEnvironment) -> APNsEnvironment? {
        switch value {
        case HERALD__V1__APNS_ENVIRONMENT__APNS_ENVIRONMENT_UNSPECIFIED: return nil
        case HERALD__V1__APNS_ENVIRONMENT__APNS_ENVIRONMENT_PRODUCTION: return .production
        case HERALD__V1__APNS_ENVIRONMENT__APNS_ENVIRONMENT_SANDBOX: return .sandbox
        default:
            violations.append(FieldViolation(field: "environment", reason: "unknown value \(value.rawValue)"))
            return nil
        }
    }

    mutating func scheduleInput(_ wire: Herald__V1__ScheduleRequest) -> ScheduleInput {
        let message = messageInput(
            bundleID: wire.bundle_id, platform: wire.platform, content: wire.content, priority: wire.priority,
            ttlSeconds: wire.ttl_case == HERALD__V1__SCHEDULE_REQUEST__TTL_TTL_SECONDS ? wire.ttl_seconds : nil,
            collapseID: wire.collapse_id, ios: wire.ios, android: wire.android, idempotencyKey: wire.idempotency_key)
        return ScheduleInput(
            message: message,
            userID: string(wire.user_id, "user_id"),
            campaignID: string(wire.campaign_id, "campaign_id"),
            deliveryMethod: deliveryMethod(wire.delivery_method),
            deliverWithinHours: wire.window_case == HERALD__V1__SCHEDULE_REQUEST__WINDOW_DELIVER_WITHIN_HOURS
                ? wire.deliver_within_hours : nil,
            targetDeliveryTime: wire.window_case == HERALD__V1__SCHEDULE_REQUEST__WINDOW_TARGET_DELIVERY_TIME
                ? string(wire.target_delivery_time, "target_delivery_time") : nil,
            deliverAfter: optionalString(wire.deliver_after, "deliver_after"),
            localSendTime: optionalString(wire.local_send_time, "local_send_time"),
            transactional: wire.transactional != 0)
    }

    /// A required string: a violation names the field when it is empty.
    mutating func required(_ pointer: UnsafeMutablePointer<CChar>?, _ field: String, maxBytes: Int) -> String {
        let value = string(pointer, field)
        if value.isEmpty {
            violations.append(FieldViolation(field: field, reason: "is required"))
        } else if value.utf8.count > maxBytes {
            violations.append(FieldViolation(field: field, reason: "is \(value.utf8.count) bytes; the limit is \(maxBytes)"))
        }
        return value
    }

    /// An optional campaign id: a violation names the field when it is too long.
    mutating func optionalCampaignID(_ pointer: UnsafeMutablePointer<CChar>?, _ field: String = "campaign_id") -> String? {
        let campaignID = optionalString(pointer, field)
        if let campaignID, campaignID.utf8.count > Validator.Limits.campaignID {
            check("is \(campaignID.utf8.count) bytes; the limit is \(Validator.Limits.campaignID)", field)
        }
        return campaignID
    }

    /// A repeated enum filter as a set: at most `limit` entries, each a
    /// known, specified value (`element` nil otherwise: a violation).
    mutating func enumSet<Wire: RawRepresentable, Value: Hashable>(
        _ values: UnsafeMutablePointer<Wire>?, count: Int, limit: Int, _ field: String, _ element: (Wire) -> Value?
    ) -> Set<Value> {
        guard count <= limit else {
            check("has \(count) entries; the limit is \(limit)", field)
            return []
        }
        var set: Set<Value> = []
        for index in 0..<count {
            guard let wire = values?[index] else { break }
            if let value = element(wire) { set.insert(value) } else { check("unknown or unspecified value \(wire.rawValue)", field) }
        }
        return set
    }

    mutating func check(_ problem: String?, _ field: String) {
        if let problem { violations.append(FieldViolation(field: field, reason: problem)) }
    }
}
