import GRPCEngine
import HeraldPrimitives

/// An error of the web API, answered as
/// `{"error": {"code": "...", "message": "...", "field": "..."}}` with the
/// HTTP status matching its gRPC code.
struct WebAPIError: Error, Sendable, Equatable {
    /// The gRPC status code's name, e.g. `INVALID_ARGUMENT`.
    var code: GRPCStatus.Code
    var message: String
    /// The request field it names, in the web API's spelling (`content.userInfo`).
    var field: String?
    /// Overrides the status the code maps to (413, 404 and 405 of the HTTP layer).
    var httpStatus: Int?

    init(_ code: GRPCStatus.Code, _ message: String, field: String? = nil, httpStatus: Int? = nil) {
        self.code = code
        self.message = message
        self.field = field
        self.httpStatus = httpStatus
    }

    /// A field of the request that is wrong.
    static func invalid(_ field: String, _ reason: String) -> WebAPIError {
        WebAPIError(.invalidArgument, "\(field): \(reason)", field: field)
    }

    /// The status a gRPC code is answered with (SPEC §8).
    static func httpStatus(for code: GRPCStatus.Code) -> Int {
        switch code {
        case .ok: 200
        case .invalidArgument, .outOfRange, .failedPrecondition: 400
        case .unauthenticated: 401
        case .permissionDenied: 403
        case .notFound: 404
        case .alreadyExists, .aborted: 409
        case .resourceExhausted: 429
        case .cancelled: 499
        case .unimplemented: 501
        case .unavailable: 503
        case .deadlineExceeded: 504
        default: 500
        }
    }

    var status: Int { httpStatus ?? Self.httpStatus(for: code) }

    /// A gRPC status from the shared handlers, its field (the first
    /// violation's path) in the web API's spelling.
    init(_ status: GRPCStatus) {
        var field: String?
        if status.code == .invalidArgument, let colon = status.message.firstIndex(of: ":") {
            let path = status.message[..<colon]
            if !path.isEmpty, !path.contains(" ") { field = Self.webSpelling(String(path)) }
        }
        self.init(status.code, Self.webSpelling(status.message), field: field)
    }

    /// The request's proto field names as the ContextPush JSON spells them.
    static func webSpelling(_ text: String) -> String {
        var text = text
        for (proto, web) in [
            ("content.user_info", "content.userInfo"), ("content.thread_id", "content.thread-id"),
            ("content.image_url", "content.imageUrl"), (".text", ""), (".translations[", "["),
        ] {
            text = text.replacing(proto, with: web)
        }
        return text
    }

    /// The JSON body.
    var body: [UInt8] {
        var error = JSONObject()
        error["code"] = .string(code.name)
        error["message"] = .string(message)
        if let field { error["field"] = .string(field) }
        var writer = JSONWriter(capacity: 256)
        writer.writeLenient(.object(JSONObject([("error", .object(error))])))
        return writer.finish()
    }
}
