import GRPCEngine
import Logging
import NIOPosix
import Testing

@testable import HeraldService

/// A Connect call's head is checked before its body (codec, version,
/// timeout, encoding, route, token), and errors take Connect's codes and
/// HTTP statuses.
@Suite struct ConnectAPITests {
    private static let path = "/herald.v1.PushService/GetMessage"

    private func api() -> ConnectAPI {
        let server = GRPCServer(configuration: GRPCServerConfiguration(), logger: Logger(label: "test"))
        server.register(Self.path, .sync { _ in [] }, admission: { metadata in
            metadata["authorization"] == "Token good" ? nil : GRPCStatus(.unauthenticated, "no token")
        })
        server.register("/herald.v1.PushService/StreamEvents", streaming: .serverStreaming { _, _ in })
        return ConnectAPI(server: server, maxBodyBytes: 1024, unauthenticatedMaxBodyBytes: 64)
    }

    private func refusal(_ headers: [(String, String)], path: String = path, method: String = "POST") -> ConnectAnswer? {
        if case .failure(let answer) = api().admit(path: path, method: method, headers: headers) { return answer }
        return nil
    }

    private let json = ("content-type", "application/json")
    private let token = ("authorization", "Token good")

    private func code(_ answer: ConnectAnswer?) -> String? {
        answer.flatMap { String(decoding: $0.body, as: UTF8.self).split(separator: "\"").dropFirst(3).first.map(String.init) }
    }

    @Test func hostileHeadsAreRefusedBeforeTheBody() {
        #expect(refusal([("content-type", "text/plain"), token])?.status == 415)
        #expect(refusal([token])?.status == 415)
        #expect(refusal([json, token], method: "PUT")?.status == 405)
        for version in ["2", "", "1.0", "01"] {
            #expect(refusal([json, token, ("connect-protocol-version", version)])?.status == 400, "\(version)")
        }
        for timeout in ["", "-1", "1.5", "soon", "12345678901", "+5", " "] {
            let answer = refusal([json, token, ("connect-timeout-ms", timeout)])
            #expect(answer?.status == 400 && code(answer) == "invalid_argument", "\(timeout)")
        }
        #expect(code(refusal([json, token, ("content-encoding", "br")])) == "unimplemented")
        #expect(refusal([json])?.status == 401)
        #expect(refusal([json, ("authorization", "Token bad")])?.status == 401)
        let streaming = refusal([json, token], path: "/herald.v1.PushService/StreamEvents")
        #expect(streaming?.status == 501 && code(streaming) == "unimplemented")
        #expect(refusal([json, token], path: "/herald.v1.PushService/Nope")?.status == 404)
        #expect(refusal([json, token], path: "/herald.v1.PushService/Cancel")?.status == 503)  // not registered yet
    }

    @Test func admittedHeadsCarryCodecEncodingAndDeadline() throws {
        let admitted = api().admit(path: Self.path, method: "POST", headers: [
            ("Content-Type", "application/proto; charset=utf-8"), ("Authorization", "Token good"),
            ("Connect-Protocol-Version", "1"), ("Connect-Timeout-Ms", "2500"), ("Content-Encoding", "gzip"),
        ])
        let call = try admitted.get()
        #expect(!call.json && call.gzip && call.deadline != nil)
        #expect(call.metadata["authorization"] == "Token good")
    }

    @Test func codesMapToConnectsNamesAndStatuses() {
        let table: [(GRPCStatus.Code, String, Int)] = [
            (.cancelled, "canceled", 499), (.unknown, "unknown", 500), (.invalidArgument, "invalid_argument", 400),
            (.deadlineExceeded, "deadline_exceeded", 504), (.notFound, "not_found", 404),
            (.alreadyExists, "already_exists", 409), (.permissionDenied, "permission_denied", 403),
            (.resourceExhausted, "resource_exhausted", 429), (.failedPrecondition, "failed_precondition", 400),
            (.aborted, "aborted", 409), (.outOfRange, "out_of_range", 400), (.unimplemented, "unimplemented", 501),
            (.internalError, "internal", 500), (.unavailable, "unavailable", 503), (.dataLoss, "data_loss", 500),
            (.unauthenticated, "unauthenticated", 401),
        ]
        for (grpc, name, status) in table {
            let answer = ConnectAnswer.error(grpc, "m")
            #expect(answer.status == status && code(answer) == name && answer.contentType == "application/json", "\(name)")
        }
    }
}
