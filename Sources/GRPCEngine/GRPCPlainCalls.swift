public import NIOCore

/// Calls on HTTP/2 that are POST requests with a content type other than
/// gRPC's, taken by a protocol served beside gRPC on the same streams (the
/// Connect protocol's unary calls): without it they get HTTP 415. Nothing
/// of it runs for a gRPC call.
public struct GRPCPlainCalls: Sendable {
    /// Decides on a request's head (path, content type, the other headers as
    /// metadata): nil leaves it to the 415 answer; otherwise what it gets.
    public var admit: @Sendable (_ path: String, _ contentType: String, _ metadata: GRPCMetadata) -> GRPCPlainAdmission?
    /// The answer to a call the engine ends itself (a body over
    /// `maxReceiveMessageBytes`: RESOURCE_EXHAUSTED; a body not received
    /// within `requestReceiveTimeout`: DEADLINE_EXCEEDED), in the protocol's form.
    public var refusal: @Sendable (GRPCStatus) -> GRPCPlainAnswer

    /// Calls taken by `admit`, ended by the engine with `refusal`.
    public init(
        admit: @escaping @Sendable (_ path: String, _ contentType: String, _ metadata: GRPCMetadata) -> GRPCPlainAdmission?,
        refusal: @escaping @Sendable (GRPCStatus) -> GRPCPlainAnswer
    ) {
        self.admit = admit
        self.refusal = refusal
    }
}

/// What a plain call's head gets (``GRPCPlainCalls/admit``).
public enum GRPCPlainAdmission: Sendable {
    /// This answer once the request has ended (its body is dropped unread).
    case answer(GRPCPlainAnswer)
    /// The body is buffered (bounded by `maxReceiveMessageBytes`) and, at the
    /// request's end, given to this function with the peer's address; its
    /// answer is sent on the connection's loop (ignored if the stream has
    /// gone).
    case call(@Sendable (_ body: [UInt8], _ remoteAddress: String?, _ loop: any EventLoop) -> EventLoopFuture<GRPCPlainAnswer>)
}

/// A plain HTTP response: status, content type and body.
public struct GRPCPlainAnswer: Sendable, Equatable {
    /// The HTTP status.
    public var status: Int
    /// The `content-type`.
    public var contentType: String
    /// The body (`content-length` is set from it).
    public var body: [UInt8]

    /// An answer with `status`, `contentType` and `body`.
    public init(status: Int, contentType: String, body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }
}
