import GRPCEngine
import HeraldPrimitives

/// A Connect unary reply as HTTP: status, content type and body (an
/// `Error` so a refused head can be a `Result` failure).
struct ConnectAnswer: Error, Sendable, Equatable {
    var status: Int
    var contentType: String
    var body: [UInt8]

    /// A Connect error: `{"code": "invalid_argument", "message": "…"}` with
    /// the HTTP status the Connect protocol maps the code to.
    static func error(_ code: GRPCStatus.Code, _ message: String, httpStatus: Int? = nil) -> ConnectAnswer {
        var object = JSONObject()
        object["code"] = .string(codeName(code))
        if !message.isEmpty { object["message"] = .string(message) }
        var writer = JSONWriter(capacity: 128)
        writer.writeLenient(.object(object))
        return ConnectAnswer(
            status: httpStatus ?? Self.httpStatus(for: code), contentType: "application/json", body: writer.finish())
    }

    /// A gRPC status from a handler, as a Connect error.
    static func error(_ status: GRPCStatus) -> ConnectAnswer { error(status.code, status.message) }

    /// The Connect spelling of a code (`canceled` with one l, the rest the
    /// gRPC name in lower case).
    static func codeName(_ code: GRPCStatus.Code) -> String {
        code == .cancelled ? "canceled" : code.name.lowercased()
    }

    /// The Connect protocol's HTTP status for a code ("Error Codes" table).
    static func httpStatus(for code: GRPCStatus.Code) -> Int {
        switch code {
        case .cancelled: 499
        case .invalidArgument, .outOfRange, .failedPrecondition: 400
        case .deadlineExceeded: 504
        case .notFound: 404
        case .alreadyExists, .aborted: 409
        case .permissionDenied: 403
        case .resourceExhausted: 429
        case .unimplemented: 501
        case .unavailable: 503
        case .unauthenticated: 401
        default: 500  // unknown, internal, data_loss
        }
    }
}
