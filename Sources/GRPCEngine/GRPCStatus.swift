/// A gRPC status: a code and a human-readable message, sent in the `grpc-status`
/// and `grpc-message` trailers. Handlers throw it to end a call with an error.
public struct GRPCStatus: Error, Sendable, Hashable, CustomStringConvertible {
    /// A gRPC status code (see grpc/doc/statuscodes.md); the raw value is the wire value.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        public static let ok = Code(rawValue: 0)
        public static let cancelled = Code(rawValue: 1)
        public static let unknown = Code(rawValue: 2)
        public static let invalidArgument = Code(rawValue: 3)
        public static let deadlineExceeded = Code(rawValue: 4)
        public static let notFound = Code(rawValue: 5)
        public static let alreadyExists = Code(rawValue: 6)
        public static let permissionDenied = Code(rawValue: 7)
        public static let resourceExhausted = Code(rawValue: 8)
        public static let failedPrecondition = Code(rawValue: 9)
        public static let aborted = Code(rawValue: 10)
        public static let outOfRange = Code(rawValue: 11)
        public static let unimplemented = Code(rawValue: 12)
        public static let internalError = Code(rawValue: 13)
        public static let unavailable = Code(rawValue: 14)
        public static let dataLoss = Code(rawValue: 15)
        public static let unauthenticated = Code(rawValue: 16)

        /// The canonical upper-case name, e.g. `RESOURCE_EXHAUSTED`; `CODE_<n>` for unknown values.
        public var name: String {
            switch rawValue {
            case 0: "OK"
            case 1: "CANCELLED"
            case 2: "UNKNOWN"
            case 3: "INVALID_ARGUMENT"
            case 4: "DEADLINE_EXCEEDED"
            case 5: "NOT_FOUND"
            case 6: "ALREADY_EXISTS"
            case 7: "PERMISSION_DENIED"
            case 8: "RESOURCE_EXHAUSTED"
            case 9: "FAILED_PRECONDITION"
            case 10: "ABORTED"
            case 11: "OUT_OF_RANGE"
            case 12: "UNIMPLEMENTED"
            case 13: "INTERNAL"
            case 14: "UNAVAILABLE"
            case 15: "DATA_LOSS"
            case 16: "UNAUTHENTICATED"
            default: "CODE_\(rawValue)"
            }
        }

        public var description: String { name }
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `message` cut to at most `limit` UTF-8 bytes at a character boundary,
    /// ending with "…" when cut: a status message must fit in a header that
    /// every client accepts, whatever a handler put in it.
    public static func truncated(_ message: String, toUTF8Bytes limit: Int) -> String {
        let utf8 = message.utf8
        guard utf8.count > limit else { return message }
        let ellipsis = "…"
        var end = utf8.index(utf8.startIndex, offsetBy: max(0, limit - ellipsis.utf8.count))
        // Step back to the start of a scalar (not inside a multi-byte sequence).
        while end > utf8.startIndex, UTF8.isContinuation(utf8[end]) { end = utf8.index(before: end) }
        return String(message[..<end]) + ellipsis
    }

    public var description: String {
        message.isEmpty ? code.name : "\(code.name): \(message)"
    }
}
