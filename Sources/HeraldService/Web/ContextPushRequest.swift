import HeraldClient

/// The ContextPush web API's JSON bodies (the seed document
/// `contextpush-simple-web-request.md`, SPEC §8) mapped to the protobuf
/// requests the gRPC Schedule and Cancel handlers take, field for field.
/// Only types are checked here (and unknown members refused, naming them):
/// every rule on the values is the handlers' own.
enum ContextPushRequest {
    /// The members of `schedule_message_for_user`.
    static let scheduleMembers: Set<String> = [
        "bundle_id", "platform", "user_id", "deliver_within_hours", "target_delivery_time", "campaign_id",
        "idempotency_key", "delivery_method", "content",
    ]
    /// The members of its `content`.
    static let contentMembers: Set<String> = [
        "title", "subtitle", "body", "default_locale", "sound", "badge", "userInfo", "thread-id", "imageUrl",
    ]
    /// The members of `cancel_message_for_user`.
    static let cancelMembers: Set<String> = ["bundle_id", "platform", "user_id", "campaign_id", "idempotency_key"]

    /// A `herald.v1.ScheduleRequest` from a `schedule_message_for_user` body.
    static func schedule(_ body: [UInt8]) throws(WebAPIError) -> [UInt8] {
        let members = try object(read(body), field: nil, allowed: scheduleMembers)
        var wire = try addressed(members)
        if let method = try string(members, "delivery_method") {
            switch method {
            case "context_aware": wire.varint(6, 1)
            case "traditional": wire.varint(6, 2)
            default: throw .invalid("delivery_method", "must be \"context_aware\" or \"traditional\", got \(quoted(method))")
            }
        }
        if let hours = try integer(members, "deliver_within_hours", in: 0...Int64(UInt32.max)) { wire.varint(7, hours) }
        // Present, even empty: the handler then names the field.
        if let target = try string(members, "target_delivery_time") { wire.string(8, target) }
        if let content = members["content"], content != .null {
            let fields = try object(content, field: "content", allowed: contentMembers)
            var failure: WebAPIError?
            wire.message(10) { content in
                do throws(WebAPIError) { try Self.content(fields, into: &content) } catch { failure = error }
            }
            if let failure { throw failure }
        }
        return wire.bytes
    }

    /// A `herald.v1.CancelRequest` from a `cancel_message_for_user` body.
    static func cancel(_ body: [UInt8]) throws(WebAPIError) -> [UInt8] {
        try addressed(object(read(body), field: nil, allowed: cancelMembers)).bytes
    }

    /// Fields 1–5, which `ScheduleRequest` and `CancelRequest` share: the
    /// bundle, platform, user, campaign and idempotency key.
    private static func addressed(_ members: [String: WebJSON]) throws(WebAPIError) -> ProtoWriter {
        var wire = ProtoWriter()
        wire.optionalString(1, try string(members, "bundle_id"))
        if let platform = try platform(members) { wire.varint(2, platform) }
        wire.optionalString(3, try string(members, "user_id"))
        wire.optionalString(4, try string(members, "campaign_id"))
        wire.optionalString(5, try string(members, "idempotency_key"))
        return wire
    }

    // MARK: - Parts

    private static func content(_ members: [String: WebJSON], into wire: inout ProtoWriter) throws(WebAPIError) {
        try localized(members, "title", number: 1, into: &wire)
        try localized(members, "subtitle", number: 2, into: &wire)
        try localized(members, "body", number: 3, into: &wire)
        wire.optionalString(4, try string(members, "default_locale", prefix: "content."))
        wire.optionalString(5, try string(members, "sound", prefix: "content."))
        if let badge = try integer(members, "badge", in: Int64(Int32.min)...Int64(Int32.max), prefix: "content.") {
            wire.varint(6, badge)
        }
        if let info = members["userInfo"], info != .null {
            guard case .object(let fields) = info else {
                throw .invalid("content.userInfo", "must be an object, got \(info.typeName)")
            }
            wire.message(7) { encodeStruct(fields, into: &$0) }
        }
        wire.optionalString(8, try string(members, "thread-id", prefix: "content."))
        wire.optionalString(9, try string(members, "imageUrl", prefix: "content."))
    }

    /// A text, or an object of translations (locale → text).
    private static func localized(
        _ members: [String: WebJSON], _ name: String, number: UInt32, into wire: inout ProtoWriter
    ) throws(WebAPIError) {
        let field = "content.\(name)"
        switch members[name] {
        case nil, .null?:
            return
        case .string(let text)?:
            wire.message(number) { $0.string(1, text) }
        case .object(let translations)?:
            var entries: [(String, String)] = []
            for member in translations {
                guard case .string(let text) = member.value else {
                    throw .invalid("\(field).\(member.key)", "must be a string, got \(member.value.typeName)")
                }
                entries.append((member.key, text))
            }
            wire.message(number) { text in
                for (locale, value) in entries {
                    text.message(2) { entry in
                        entry.string(1, locale)
                        entry.string(2, value)
                    }
                }
            }
        case let other?:
            throw .invalid(field, "must be a string or an object of translations, got \(other.typeName)")
        }
    }

    /// `google.protobuf.Struct` (fields = 1: map<string, Value>).
    private static func encodeStruct(_ members: [WebJSON.Member], into wire: inout ProtoWriter) {
        for member in members {
            wire.message(1) { entry in
                entry.string(1, member.key)
                entry.message(2) { encodeValue(member.value, into: &$0) }
            }
        }
    }

    /// `google.protobuf.Value`.
    private static func encodeValue(_ value: WebJSON, into wire: inout ProtoWriter) {
        switch value {
        case .null: wire.varint(1, 0)
        case .number(let number, _): wire.double(2, number)
        case .string(let text): wire.string(3, text)
        case .bool(let flag): wire.varint(4, flag ? 1 : 0)
        case .object(let members): wire.message(5) { encodeStruct(members, into: &$0) }
        case .array(let items):
            wire.message(6) { list in
                for item in items { list.message(1) { encodeValue(item, into: &$0) } }
            }
        }
    }

    // MARK: - Reading

    private static func read(_ body: [UInt8]) throws(WebAPIError) -> WebJSON {
        do {
            return try WebJSONReader.read(body)
        } catch {
            throw WebAPIError(.invalidArgument, "the body is not valid JSON: \(error.reason) (byte \(error.offset))", field: error.field)
        }
    }

    /// An object's members by name; a member not in `allowed` is an error naming it.
    private static func object(_ value: WebJSON, field: String?, allowed: Set<String>) throws(WebAPIError) -> [String: WebJSON] {
        guard case .object(let members) = value else {
            if let field { throw .invalid(field, "must be an object, got \(value.typeName)") }
            throw WebAPIError(.invalidArgument, "the body must be a JSON object, got \(value.typeName)")
        }
        var byName: [String: WebJSON] = [:]
        for member in members {
            let path = field.map { "\($0).\(member.key)" } ?? member.key
            guard allowed.contains(member.key) else {
                throw .invalid(path, "unknown field (expected one of \(allowed.sorted().joined(separator: ", ")))")
            }
            byName[member.key] = member.value
        }
        return byName
    }

    /// A string member; nil when absent or null.
    private static func string(_ members: [String: WebJSON], _ name: String, prefix: String = "") throws(WebAPIError) -> String? {
        switch members[name] {
        case nil, .null?: return nil
        case .string(let text)?: return text
        case let other?: throw .invalid(prefix + name, "must be a string, got \(other.typeName)")
        }
    }

    /// An integer member within `range`; nil when absent or null.
    private static func integer(
        _ members: [String: WebJSON], _ name: String, in range: ClosedRange<Int64>, prefix: String = ""
    ) throws(WebAPIError) -> Int64? {
        switch members[name] {
        case nil, .null?: return nil
        case .number(_, let integer?)? where range.contains(integer): return integer
        case .number?: throw .invalid(prefix + name, "must be an integer from \(range.lowerBound) to \(range.upperBound)")
        case let other?: throw .invalid(prefix + name, "must be an integer, got \(other.typeName)")
        }
    }

    /// `platform`: "ios" → PLATFORM_IOS, "android" → PLATFORM_ANDROID.
    private static func platform(_ members: [String: WebJSON]) throws(WebAPIError) -> Int64? {
        guard let platform = try string(members, "platform") else { return nil }
        switch platform {
        case "ios": return 1
        case "android": return 2
        default: throw .invalid("platform", "must be \"ios\" or \"android\", got \(quoted(platform))")
        }
    }

    private static func quoted(_ text: String) -> String {
        "\"\(text.prefix(64))\(text.count > 64 ? "…" : "")\""
    }
}
