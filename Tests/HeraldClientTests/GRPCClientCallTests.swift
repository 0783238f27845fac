import GRPCEngine
import Testing

@testable import HeraldClient

/// How a closed stream becomes a status: trailers first, then resets, then
/// gRPC's HTTP-to-gRPC table for answers without a grpc-status.
@Suite struct GRPCClientCallTests {
    private func call(_ headers: [(String, String)]) -> GRPCClientCall {
        let (_, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
        let call = GRPCClientCall(continuation: continuation, body: .init())
        call.headers = headers.map { (name: $0.0, value: $0.1) }
        return call
    }

    @Test func hostileStatusHeaders() {
        #expect(call([(":status", "200"), ("grpc-status", "banana")]).status(errorCode: 0).code == .unknown)
        #expect(call([(":status", "200"), ("grpc-status", "")]).status(errorCode: 0).code == .unknown)
        #expect(call([(":status", "200"), ("grpc-status", "99")]).status(errorCode: 0).code.rawValue == 99)
        #expect(ExitStatus.forFailure(call([("grpc-status", "99")]).status(errorCode: 0).code) == 12)
        // The last grpc-status wins (trailers after headers).
        #expect(call([("grpc-status", "0"), ("grpc-status", "5")]).status(errorCode: 0).code == .notFound)
    }

    @Test func aResetWithoutStatusIsUnavailable() {
        let status = call([(":status", "200")]).status(errorCode: 2)
        #expect(status.code == .unavailable)
        #expect(status.message.contains("HTTP/2 error 2"))
    }

    @Test(arguments: [
        (400, GRPCStatus.Code.internalError), (401, .unauthenticated), (403, .permissionDenied), (404, .unimplemented),
        (415, .unknown), (429, .unavailable), (502, .unavailable), (503, .unavailable), (504, .unavailable), (200, .unknown),
    ])
    func httpStatusesWithoutGRPCStatus(http: Int, code: GRPCStatus.Code) {
        #expect(call([(":status", "\(http)")]).status(errorCode: 0).code == code)
    }

    @Test func aLocalFailureWinsOverTrailers() {
        let failing = call([("grpc-status", "0")])
        failing.failure = GRPCStatus(.deadlineExceeded, "late")
        #expect(failing.status(errorCode: 8).code == .deadlineExceeded)
    }

    @Test func grpcMessageIsPercentDecoded() {
        #expect(GRPCPercentEncoding.decode("a%20b%25c") == "a b%c")
        #expect(GRPCPercentEncoding.decode("%E2%9C%93") == "✓")
        #expect(GRPCPercentEncoding.decode("100%") == "100%")
        #expect(GRPCPercentEncoding.decode("%zz%4") == "%zz%4")
        #expect(GRPCPercentEncoding.decode("%FF") == "\u{FFFD}")
        let message = call([("grpc-status", "3"), ("grpc-message", "bundle_id%3A%20required")]).status(errorCode: 0)
        #expect(message == GRPCStatus(.invalidArgument, "bundle_id: required"))
    }
}
