import HeraldPrimitives

/// One HTTP answer: status, extra headers, body. Built by the token endpoint
/// and the send validator, submitted by the connection.
/// (An `Error` too: validators return a refusal as `Result.failure(reply)`.)
struct FCMReply: Equatable, Error {
    var status: Int
    var headers: [(name: String, value: String)] = []
    var body: [UInt8] = []

    static func == (a: FCMReply, b: FCMReply) -> Bool {
        a.status == b.status && a.body == b.body
            && a.headers.map(\.name) == b.headers.map(\.name) && a.headers.map(\.value) == b.headers.map(\.value)
    }

    static let jsonContentType: [(name: String, value: String)] = [("content-type", "application/json; charset=UTF-8")]

    static func json(_ status: Int, _ value: JSONValue, headers: [(name: String, value: String)] = []) -> FCMReply {
        var writer = JSONWriter()
        writer.writeLenient(value)
        return FCMReply(status: status, headers: jsonContentType + headers, body: writer.finish())
    }

    /// `200 {"name":"…"}`, written straight into bytes (the hot path: no JSON tree, shared headers).
    static func accepted(name: String) -> FCMReply {
        var writer = JSONWriter(capacity: name.utf8.count + 16)
        writer.writeRaw(#"{"name":"#)
        writer.writeString(name)
        writer.writeByte(UInt8(ascii: "}"))
        return FCMReply(status: 200, headers: jsonContentType, body: writer.finish())
    }

    /// Google's error shape (`google.rpc.Status`), with an `FcmError` detail
    /// carrying `errorCode` when given.
    static func googleError(
        _ code: Int, status: String, message: String, errorCode: String?, retryAfter: Int? = nil
    ) -> FCMReply {
        var error: JSONObject = ["code": .number(Double(code)), "message": .string(message), "status": .string(status)]
        if let errorCode {
            error["details"] = .array([.object([
                "@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError",
                "errorCode": .string(errorCode),
            ])])
        }
        let headers: [(name: String, value: String)] = retryAfter.map { [("retry-after", String($0))] } ?? []
        return json(code, .object(["error": .object(error)]), headers: headers)
    }

    static func invalidArgument(_ message: String) -> FCMReply {
        googleError(400, status: "INVALID_ARGUMENT", message: message, errorCode: "INVALID_ARGUMENT")
    }

    static func unauthenticated(_ message: String) -> FCMReply {
        // Google's 401 carries no FcmError detail: clients go by `status`.
        googleError(401, status: "UNAUTHENTICATED", message: message, errorCode: nil)
    }

    static func permissionDenied(_ message: String) -> FCMReply {
        googleError(403, status: "PERMISSION_DENIED", message: message, errorCode: nil)
    }

    static let unregistered = googleError(
        404, status: "NOT_FOUND", message: "Requested entity was not found.", errorCode: "UNREGISTERED")

    static let senderIDMismatch = googleError(
        403, status: "PERMISSION_DENIED", message: "SenderId mismatch", errorCode: "SENDER_ID_MISMATCH")

    static func quotaExceeded(retryAfter: Int?) -> FCMReply {
        googleError(
            429, status: "RESOURCE_EXHAUSTED", message: "Quota exceeded for quota metric 'Send requests' of service 'fcm.googleapis.com'.",
            errorCode: "QUOTA_EXCEEDED", retryAfter: retryAfter)
    }

    static let internalError = googleError(
        500, status: "INTERNAL", message: "Internal error encountered.", errorCode: "INTERNAL")

    static func unavailable(retryAfter: Int?) -> FCMReply {
        googleError(503, status: "UNAVAILABLE", message: "The service is currently unavailable.", errorCode: "UNAVAILABLE", retryAfter: retryAfter)
    }

    static let thirdPartyAuthError = googleError(
        401, status: "UNAUTHENTICATED", message: "Auth error from APNS or Web Push Service", errorCode: "THIRD_PARTY_AUTH_ERROR")

    static let badGatewayHTML = FCMReply(
        status: 502, headers: [("content-type", "text/html; charset=UTF-8")],
        body: Array("""
            <!DOCTYPE html>
            <html lang=en><meta charset=utf-8><title>Error 502 (Server Error)!!1</title>
            <p><b>502.</b> <ins>That’s an error.</ins>
            <p>The server encountered a temporary error and could not complete your request.<p>Please try again in 30 seconds.  <ins>That’s all we know.</ins>
            </html>

            """.utf8))

    static func notFound(_ path: String) -> FCMReply {
        googleError(404, status: "NOT_FOUND", message: "The requested URL \(path.prefix(200)) was not found on this server.", errorCode: nil)
    }

    static func methodNotAllowed() -> FCMReply {
        googleError(405, status: "UNIMPLEMENTED", message: "Method not allowed: use POST.", errorCode: nil)
    }

    // MARK: Token endpoint

    /// The OAuth2 error answer (RFC 6749 §5.2).
    static func oauthError(_ error: String, _ description: String) -> FCMReply {
        json(400, .object(["error": .string(error), "error_description": .string(description)]))
    }

    static func accessToken(_ token: String, expiresIn: Int) -> FCMReply {
        json(200, .object([
            "access_token": .string(token), "expires_in": .number(Double(expiresIn)), "token_type": "Bearer",
        ]))
    }
}
