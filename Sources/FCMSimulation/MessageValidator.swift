import HeraldPrimitives

/// FCM's checks on a `messages:send` body, as pure functions. Every refusal
/// is 400 INVALID_ARGUMENT whose message names the field, as Google's do.
enum MessageValidator {
    enum Target: Equatable {
        case token(String)
        case topic(String)
        case condition(String)
    }

    struct Valid {
        var target: Target
        /// The parsed `message` object.
        var message: JSONValue
        /// The `message` object's bytes as received.
        var messageBytes: [UInt8]
        var validateOnly: Bool
    }

    /// The most a message may carry, target excluded (compact JSON bytes).
    static let maxPayload = 4096
    /// `android.ttl` at most four weeks.
    static let maxTTLSeconds = 2_419_200
    /// Accepted registration-token lengths: what Herald's validator allows
    /// (real tokens are about 160 bytes; short ones let tests stay readable).
    static let tokenLengths = 1...4096

    static let messageFields: Set<String> = [
        "name", "data", "notification", "android", "apns", "webpush", "fcm_options", "fcmOptions",
        "token", "topic", "condition",
    ]
    static let notificationFields: Set<String> = ["title", "body", "image"]
    static let androidFields: Set<String> = [
        "collapse_key", "collapseKey", "priority", "ttl", "restricted_package_name", "restrictedPackageName",
        "data", "notification", "fcm_options", "fcmOptions", "direct_boot_ok", "directBootOk",
    ]
    static let reservedDataKeys: Set<String> = ["from", "message_type", "collapse_key"]
    static let targetFields = ["token", "topic", "condition"]
    static let androidStringFields = ["collapse_key", "collapseKey", "restricted_package_name", "restrictedPackageName"]
    static let androidObjectFields = ["notification", "fcm_options", "fcmOptions"]
    static let androidBoolFields = ["direct_boot_ok", "directBootOk"]
    static let messageObjectFields = ["apns", "webpush", "fcm_options", "fcmOptions"]

    typealias Failure = FCMReply

    static func validate(_ body: [UInt8]) -> Result<Valid, FCMReply> {
        let root: JSONValue
        do { root = try JSONParser.parse(body) } catch {
            return .failure(.invalidArgument("Invalid JSON payload received. \(error.description)."))
        }
        guard let top = root.objectValue else {
            return .failure(.invalidArgument("Invalid JSON payload received. The request body must be a JSON object."))
        }
        for key in top.keys where key != "message" && key != "validate_only" && key != "validateOnly" {
            return .failure(unknown(key, at: nil))
        }
        var validateOnly = false
        if let flag = top["validate_only"] ?? top["validateOnly"] {
            guard let value = flag.boolValue else { return .failure(invalidValue("validate_only", "TYPE_BOOL", flag)) }
            validateOnly = value
        }
        guard let messageValue = top["message"] else {
            return .failure(.invalidArgument("Invalid value at 'message': the field is required."))
        }
        guard let message = messageValue.objectValue else {
            return .failure(invalidValue("message", "type.googleapis.com/google.firebase.fcm.v1.Message", messageValue))
        }
        let target: Target
        switch checkMessage(message) {
        case .failure(let failure): return .failure(failure)
        case .success(let found): target = found
        }
        let size = compactSize(message, excluding: targetFields)
        if size > maxPayload {
            return .failure(.invalidArgument(
                "Invalid value at 'message': Message is too big (\(size) bytes; at most \(maxPayload))."))
        }
        // As received; a key spelled with escapes (`"messag\u0065"`) is not found raw: then compact.
        let received = JSONSpan.member("message", in: body).map { Array(body[$0]) } ?? {
            var compact = JSONWriter()
            compact.writeLenient(messageValue)
            return compact.bytes
        }()
        return .success(Valid(target: target, message: messageValue, messageBytes: received, validateOnly: validateOnly))
    }

    /// Compact JSON bytes of `object` without the members `excluded` (the
    /// payload size FCM limits): written, not measured by hand, so the count
    /// is exactly what a compact writer produces; member order does not change it.
    static func compactSize(_ object: JSONObject, excluding excluded: [String]) -> Int {
        var writer = JSONWriter()
        writer.writeByte(UInt8(ascii: "{"))
        var first = true
        for (key, value) in object where !excluded.contains(key) {
            writer.writeKey(key, first: first)
            first = false
            writer.writeLenient(value)
        }
        writer.writeByte(UInt8(ascii: "}"))
        return writer.count
    }

    /// Fields, target, data, notification and android of one `message`.
    static func checkMessage(_ message: JSONObject) -> Result<Target, FCMReply> {
        for key in message.keys where !messageFields.contains(key) {
            return .failure(unknown(key, at: "message"))
        }
        var targets: [Target] = []
        for field in targetFields {
            guard let value = message[field] else { continue }
            guard let text = value.stringValue else {
                return .failure(invalidValue("message.\(field)", "TYPE_STRING", value))
            }
            switch field {
            case "token":
                guard isRegistrationToken(text) else {
                    return .failure(.invalidArgument("The registration token is not a valid FCM registration token (message.token)."))
                }
                targets.append(.token(text))
            case "topic":
                let name = text.hasPrefix("/topics/") ? String(text.dropFirst(8)) : text
                guard isTopic(name) else { return .failure(.invalidArgument("Invalid value at 'message.topic': invalid topic name.")) }
                targets.append(.topic(name))
            default:
                guard !text.isEmpty, text.utf8.count <= 1024 else {
                    return .failure(.invalidArgument("Invalid value at 'message.condition': invalid condition expression."))
                }
                targets.append(.condition(text))
            }
        }
        guard let target = targets.first else {
            return .failure(.invalidArgument("Recipient of the message is not set (message.token, message.topic or message.condition)."))
        }
        if targets.count > 1 {
            return .failure(.invalidArgument("Invalid value at 'message': oneof field 'target' is already set; exactly one of token, topic, condition is allowed."))
        }
        if let data = message["data"], let failure = checkData(data, path: "message.data") { return .failure(failure) }
        if let notification = message["notification"], let failure = checkNotification(notification) { return .failure(failure) }
        if let android = message["android"], let failure = checkAndroid(android) { return .failure(failure) }
        for field in messageObjectFields {
            if let value = message[field], value.objectValue == nil {
                return .failure(invalidValue("message.\(field)", "TYPE_MESSAGE", value))
            }
        }
        if let name = message["name"], name.stringValue == nil { return .failure(invalidValue("message.name", "TYPE_STRING", name)) }
        return .success(target)
    }

    /// A map of strings with no reserved keys.
    static func checkData(_ value: JSONValue, path: String) -> FCMReply? {
        guard let data = value.objectValue else { return invalidValue(path, "TYPE_MESSAGE", value) }
        // All good (the usual case): no sorting. Otherwise the first offender in key order.
        if data.allSatisfy({ $0.value.stringValue != nil && !isReservedDataKey($0.key) }) { return nil }
        for (key, entry) in data.sorted(by: { $0.key < $1.key }) {
            guard entry.stringValue != nil else { return invalidValue("\(path)[\(key)].value", "TYPE_STRING", entry) }
            if isReservedDataKey(key) {
                return .invalidArgument("Invalid value at '\(path)': the key \"\(key.prefix(64))\" is reserved.")
            }
        }
        return nil
    }

    static func isReservedDataKey(_ key: String) -> Bool {
        reservedDataKeys.contains(key) || key.hasPrefix("google") || key.hasPrefix("gcm") || key.isEmpty
    }

    static func checkNotification(_ value: JSONValue) -> FCMReply? {
        guard let notification = value.objectValue else { return invalidValue("message.notification", "TYPE_MESSAGE", value) }
        if notification.allSatisfy({ notificationFields.contains($0.key) && $0.value.stringValue != nil }) { return nil }
        for (key, entry) in notification.sorted(by: { $0.key < $1.key }) {
            guard notificationFields.contains(key) else { return unknown(key, at: "message.notification") }
            guard entry.stringValue != nil else { return invalidValue("message.notification.\(key)", "TYPE_STRING", entry) }
        }
        return nil
    }

    static func checkAndroid(_ value: JSONValue) -> FCMReply? {
        guard let android = value.objectValue else { return invalidValue("message.android", "TYPE_MESSAGE", value) }
        if !android.keys.allSatisfy(androidFields.contains) {
            for key in android.keys.sorted() where !androidFields.contains(key) {
                return unknown(key, at: "message.android")
            }
        }
        for key in androidStringFields {
            if let entry = android[key], entry.stringValue == nil {
                return invalidValue("message.android.\(key)", "TYPE_STRING", entry)
            }
        }
        if let priority = android["priority"], priority != "NORMAL" && priority != "HIGH" {
            return invalidValue(
                "message.android.priority", "type.googleapis.com/google.firebase.fcm.v1.AndroidConfig.AndroidMessagePriority",
                priority)
        }
        if let ttl = android["ttl"] {
            guard let text = ttl.stringValue, let seconds = ttlSeconds(text) else {
                return invalidValue("message.android.ttl", "type.googleapis.com/google.protobuf.Duration", ttl)
            }
            if seconds > Double(maxTTLSeconds) {
                return .invalidArgument("Invalid value at 'message.android.ttl': \(text.prefix(64)) exceeds the maximum of \(maxTTLSeconds)s.")
            }
        }
        if let data = android["data"], let failure = checkData(data, path: "message.android.data") { return failure }
        for key in androidObjectFields {
            if let entry = android[key], entry.objectValue == nil {
                return invalidValue("message.android.\(key)", "TYPE_MESSAGE", entry)
            }
        }
        for key in androidBoolFields {
            if let entry = android[key], entry.boolValue == nil { return invalidValue("message.android.\(key)", "TYPE_BOOL", entry) }
        }
        return nil
    }

    /// Seconds of a `^\d+(\.\d{1,9})?s$` duration; nil when it does not match.
    static func ttlSeconds(_ text: String) -> Double? {
        var bytes = Array(text.utf8)
        guard bytes.last == UInt8(ascii: "s") else { return nil }
        bytes.removeLast()
        let parts = bytes.split(separator: UInt8(ascii: "."), maxSplits: 1, omittingEmptySubsequences: false)
        func digits(_ part: ArraySlice<UInt8>) -> Bool { !part.isEmpty && part.allSatisfy { $0 >= 48 && $0 <= 57 } }
        guard let whole = parts.first, digits(whole) else { return nil }
        if parts.count == 2 { guard digits(parts[1]), parts[1].count <= 9 else { return nil } }
        // Leading zeros are fine; more than 12 significant digits is over the limit anyway.
        let significant = whole.drop { $0 == 48 }
        guard significant.count <= 12 else { return Double.infinity }
        let value = significant.reduce(0) { $0 * 10 + Double($1 - 48) }
        let fraction = parts.count == 2 && parts[1].contains { $0 != 48 } ? 0.5 : 0
        return value + fraction
    }

    /// Letters, digits, `:`, `-`, `_`, within ``tokenLengths``.
    static func isRegistrationToken(_ token: String) -> Bool {
        let bytes = token.utf8
        guard tokenLengths.contains(bytes.count) else { return false }
        return bytes.allSatisfy { byte in
            (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122)
                || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
    }

    /// `[a-zA-Z0-9-_.~%]{1,900}`, as FCM documents topic names.
    static func isTopic(_ name: String) -> Bool {
        let bytes = name.utf8
        guard !bytes.isEmpty, bytes.count <= 900 else { return false }
        return bytes.allSatisfy { byte in
            (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122)
                || [UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"), UInt8(ascii: "%")].contains(byte)
        }
    }

    static func unknown(_ key: String, at path: String?) -> FCMReply {
        let location = path.map { " at '\($0)'" } ?? ""
        return .invalidArgument("Invalid JSON payload received. Unknown name \"\(key.prefix(64))\"\(location): Cannot find field.")
    }

    static func invalidValue(_ path: String, _ type: String, _ value: JSONValue) -> FCMReply {
        var writer = JSONWriter()
        writer.writeLenient(value)
        let shown = String(decoding: writer.bytes.prefix(64), as: UTF8.self)
        return .invalidArgument("Invalid value at '\(path)' (\(type)), \(shown)")
    }
}
