import HeraldPrimitives

/// Reads FCM's answer body: `{"name":…}` on 200, else a `google.rpc.Status`
/// (`{"error":{"code","message","status","details":[{"@type":…FcmError,"errorCode":…}]}}`).
/// Defensive: HTML, empty, truncated or huge bodies give a clear response, never a crash.
enum FCMErrorBody {
    static let fcmErrorType = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
    static let badRequestType = "type.googleapis.com/google.rpc.BadRequest"
    static let maximumMessage = 512

    static func response(status: Int, body: [UInt8], truncated: Bool, retryAfter: Duration?) -> FCMResponse {
        var response = FCMResponse(status: status, retryAfter: retryAfter)
        let object = truncated ? nil : (try? JSONParser.parse(body))?.objectValue
        if status == 200 {
            response.messageName = object?["name"]?.stringValue.map { clip($0, to: 256) }
            return response
        }
        guard let error = object?["error"]?.objectValue else {
            response.errorCode = fallbackCode(status: status, statusName: nil)
            response.errorMessage = describeUnparsed(status: status, body: body, truncated: truncated)
            return response
        }
        var detailCode: String?
        var fields: [String] = []
        for detail in (error["details"]?.arrayValue ?? []).prefix(16) {
            guard let detail = detail.objectValue, let type = detail["@type"]?.stringValue else { continue }
            if type == fcmErrorType, detailCode == nil {
                detailCode = detail["errorCode"]?.stringValue
            } else if type == badRequestType {
                for violation in (detail["fieldViolations"]?.arrayValue ?? []).prefix(8) {
                    if let field = violation["field"]?.stringValue, !field.isEmpty { fields.append(field) }
                }
            }
        }
        let statusName = error["status"]?.stringValue
        // Only FCM's own detail may say a token is gone or belongs to another
        // sender: a bare 404/403 (wrong project, API disabled, missing
        // permission) must not cost a device its registration.
        response.errorCode = detailCode.flatMap(FCMErrorCode.init(rawValue:)) ?? fallbackCode(status: status, statusName: statusName)
        var message = error["message"]?.stringValue ?? statusName ?? "HTTP \(status)"
        if let field = fields.first, !message.contains(field) { message += " (field: \(field))" }
        response.errorMessage = clip(sanitized(message), to: maximumMessage)
        return response
    }

    /// The code for an answer without an `FcmError` detail, from `error.status` or else the HTTP status.
    static func fallbackCode(status: Int, statusName: String?) -> FCMErrorCode {
        switch statusName {
        case "INVALID_ARGUMENT": return .invalidArgument
        case "RESOURCE_EXHAUSTED": return .quotaExceeded
        case "UNAVAILABLE": return .unavailable
        case "INTERNAL": return .internal
        case "UNAUTHENTICATED": return .unauthenticated
        default: break
        }
        switch status {
        case 400: return .invalidArgument
        case 401: return .unauthenticated
        case 429: return .quotaExceeded
        case 500: return .internal
        case 502, 503, 504: return .unavailable
        default: return .unspecified
        }
    }

    private static func describeUnparsed(status: Int, body: [UInt8], truncated: Bool) -> String {
        if body.isEmpty { return "HTTP \(status) with an empty body" }
        let kind = truncated ? "a body over \(FCMHTTPAnswer.maximumBody) bytes" : "a body that is not a google.rpc.Status"
        let start = sanitized(String(decoding: body.prefix(120), as: UTF8.self))
        return clip("HTTP \(status) with \(kind): \(start)", to: maximumMessage)
    }

    /// Control characters (newlines of an HTML page, NULs) become spaces; runs collapse.
    static func sanitized(_ text: String) -> String {
        var result = ""
        var lastWasSpace = false
        for scalar in text.unicodeScalars {
            let space = scalar.value < 0x20 || scalar.value == 0x7f || scalar == " "
            if space {
                if !lastWasSpace { result.unicodeScalars.append(" ") }
            } else {
                result.unicodeScalars.append(scalar)
            }
            lastWasSpace = space
        }
        return result.trimmingSpaces
    }

    /// At most `limit` UTF-8 bytes, cut on a character boundary.
    static func clip(_ text: String, to limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        var result = ""
        var used = 0
        for character in text {
            let size = character.utf8.count
            if used + size > limit - 3 { break }
            result.append(character)
            used += size
        }
        return result + "..."
    }
}
