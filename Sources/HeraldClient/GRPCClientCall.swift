import GRPCEngine
import HTTP2Core

/// One gRPC call in flight: its reply messages go to `continuation`, its
/// headers and trailers are kept for the status.
final class GRPCClientCall {
    let continuation: AsyncThrowingStream<[UInt8], any Error>.Continuation
    /// Alive until the stream closes (nghttp2 reads it).
    let body: HTTP2OutboundBody
    var deframer = GRPCMessageDeframer(maxMessageBytes: GRPCClient.maximumMessageBytes)
    var headers: [(name: String, value: String)] = []
    var failure: GRPCStatus?

    init(continuation: AsyncThrowingStream<[UInt8], any Error>.Continuation, body: HTTP2OutboundBody) {
        self.continuation = continuation
        self.body = body
    }

    func header(_ name: String) -> String? { headers.last { $0.name == name }?.value }

    /// The call's status once its stream closed (`errorCode`: the HTTP/2 reset code, 0 if none).
    func status(errorCode: UInt32) -> GRPCStatus {
        if let failure { return failure }
        if let text = header("grpc-status") {
            let code = Int(text).map(GRPCStatus.Code.init(rawValue:)) ?? .unknown
            return GRPCStatus(code, GRPCPercentEncoding.decode(header("grpc-message") ?? ""))
        }
        if errorCode != 0 {
            return GRPCStatus(.unavailable, "the server reset the call (HTTP/2 error \(errorCode))")
        }
        let http = header(":status").flatMap { Int($0) } ?? 0
        // gRPC's HTTP-to-gRPC table (doc/http-grpc-status-mapping.md).
        let code: GRPCStatus.Code = switch http {
        case 400: .internalError
        case 401: .unauthenticated
        case 403: .permissionDenied
        case 404: .unimplemented
        case 429, 502, 503, 504: .unavailable
        default: .unknown
        }
        return GRPCStatus(code, http == 200 ? "the answer had no grpc-status" : "HTTP status \(http) without a gRPC status")
    }
}
