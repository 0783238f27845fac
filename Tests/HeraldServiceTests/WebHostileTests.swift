import Foundation
import HeraldTestSupport
import Logging
import Testing

@testable import HeraldService

/// HTTP/1.1 on the gRPC port, attacked over real loopback sockets: every
/// case ends in a clear status or a closed connection, and a gRPC
/// Health/Check on the same port still answers SERVING afterwards.
@Suite("HTTP/1.1 on the gRPC port: hostile clients", .timeLimit(.minutes(2)))
struct WebHostileTests {
    static let schedulePath = "/v1/campaigns/schedule_message_for_user"

    /// A server with small limits (so the cases are quick): 64 KiB bodies, 1 s per request.
    /// `requestTimeout`: short only where a test waits for it to cut a
    /// request; elsewhere long, so that a loaded machine (the server's loop
    /// not reading a request within a second of its connection) cannot cut
    /// a request the test expects answered.
    func withServer(
        tokens: [AccessPolicy.Grant] = [], requestTimeout: Duration = .seconds(30), _ body: (Int) async throws -> Void
    ) async throws {
        try await withTemporaryDirectory(prefix: "herald-web") { directory in
            var configuration = HeraldConfiguration()
            configuration.port = 0
            configuration.dataDirectory = directory
            configuration.drainTimeout = .seconds(5)
            configuration.grpc.maxReceiveMessageBytes = 64 * 1024
            configuration.grpc.requestReceiveTimeout = requestTimeout
            configuration.accessPolicy = AccessPolicy(grants: tokens)
            let server = HeraldServer(configuration: configuration, logger: Logger(label: "test"))
            try await server.withRunning { address in
                try await body(address.port)
                // The server is healthy: gRPC on the same port still works.
                #expect(try HTTP1TestClient(port: address.port).healthCheckServing())
            }
        }
    }

    @Test("gRPC still works with the preface split into single bytes (the check waits for it whole)")
    func fragmentedPreface() async throws {
        try await withServer { port async throws in
            #expect(try HTTP1TestClient(port: port).healthCheckServing(prefaceChunks: 24))
        }
    }

    @Test("slowloris: headers that never end are cut by the request timeout (closed)")
    func slowloris() async throws {
        try await withServer(requestTimeout: .seconds(1)) { port async throws in
            let client = try HTTP1TestClient(port: port)
            client.send("POST \(Self.schedulePath) HTTP/1.1\r\nHost: x\r\nX-Slow: a")
            #expect(client.isClosedByServer())
        }
    }

    @Test("a chunked body that never ends is cut by the request timeout (408, closed)")
    func endlessChunkedBody() async throws {
        try await withServer(requestTimeout: .seconds(1)) { port async throws in
            let client = try HTTP1TestClient(port: port)
            client.send("POST \(Self.schedulePath) HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
            #expect(client.readResponse()?.status == 408)
            #expect(client.isClosedByServer())
        }
    }

    @Test("a pipelining flood is answered in order, one at a time")
    func pipeliningFlood() async throws {
        try await withServer { port async throws in
            let client = try HTTP1TestClient(port: port)
            let count = 300
            var requests = ""
            for index in 0..<count {
                let body = "{\"x\(index)\":1}"
                requests += "POST \(Self.schedulePath) HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            }
            client.send(requests)
            var answered = 0
            while answered < count, let response = client.readResponse() {
                #expect(response.status == 400)
                #expect(response.text.contains(#""field":"x\#(answered)""#))
                answered += 1
            }
            #expect(answered == count)
        }
    }

    @Test("an oversized body is refused by its Content-Length (413) before it is read, and the connection closed")
    func oversizedBody() async throws {
        try await withServer { port async throws in
            let client = try HTTP1TestClient(port: port)
            client.send("POST \(Self.schedulePath) HTTP/1.1\r\nHost: x\r\nContent-Length: 10485760\r\n\r\n{\"a\":")
            let response = client.readResponse()
            #expect(response?.status == 413)
            #expect(response?.text.contains("RESOURCE_EXHAUSTED") == true)
            #expect(client.isClosedByServer())
        }
    }

    @Test("an oversized chunked body is refused (413) once it passes the limit")
    func oversizedChunkedBody() async throws {
        try await withServer { port async throws in
            let client = try HTTP1TestClient(port: port)
            var request = "POST \(Self.schedulePath) HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            let chunk = String(repeating: "x", count: 16 * 1024)
            for _ in 0..<5 { request += "4000\r\n\(chunk)\r\n" }
            client.send(request)
            #expect(client.readResponse()?.status == 413)
            #expect(client.isClosedByServer())
        }
    }

    @Test("request smuggling: Content-Length with Transfer-Encoding is 400, closed")
    func contentLengthAndTransferEncoding() async throws {
        try await withServer { port async throws in
            let client = try HTTP1TestClient(port: port)
            client.send("POST \(Self.schedulePath) HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(client.readResponse()?.status == 400)
            #expect(client.isClosedByServer())
        }
    }

    @Test("two different Content-Length headers are 400, closed")
    func twoContentLengths() async throws {
        try await withServer { port async throws in
            let client = try HTTP1TestClient(port: port)
            client.send("POST \(Self.schedulePath) HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\n{}")
            #expect(client.readResponse()?.status == 400)
            #expect(client.isClosedByServer())
        }
    }

    @Test("NUL or a bare CR in a header value is 400, closed", arguments: ["a\u{0}b", "a\rb"])
    func controlCharacterInHeader(value: String) async throws {
        try await withServer { port async throws in
            let client = try HTTP1TestClient(port: port)
            client.send("POST \(Self.schedulePath) HTTP/1.1\r\nHost: x\r\nX-Bad: \(value)\r\nContent-Length: 2\r\n\r\n{}")
            #expect(client.readResponse()?.status == 400)
            #expect(client.isClosedByServer())
        }
    }

    @Test("headers past the header limit are 400, closed")
    func hugeHeaders() async throws {
        try await withServer { port async throws in
            let client = try HTTP1TestClient(port: port)
            client.send("POST \(Self.schedulePath) HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 20 * 1024))\r\n\r\n")
            #expect(client.readResponse()?.status == 400)
            #expect(client.isClosedByServer())
        }
    }

    @Test("an unknown path is a 404 JSON error, a wrong method a 405 with Allow: POST; each then closes the connection")
    func unknownPathAndWrongMethod() async throws {
        try await withServer { port async throws in
            let client = try HTTP1TestClient(port: port)
            client.send("GET /v2/nothing HTTP/1.1\r\nHost: x\r\n\r\n")
            let notFound = client.readResponse()
            #expect(notFound?.status == 404)
            #expect(notFound?.header("content-type") == "application/json")
            #expect(notFound?.text.hasPrefix(#"{"error":{"code":"NOT_FOUND""#) == true)
            #expect(client.isClosedByServer())
            let other = try HTTP1TestClient(port: port)
            other.send("GET \(Self.schedulePath) HTTP/1.1\r\nHost: x\r\n\r\n")
            let wrongMethod = other.readResponse()
            #expect(wrongMethod?.status == 405)
            #expect(wrongMethod?.header("allow") == "POST")
            #expect(wrongMethod?.text.contains("takes POST only") == true)
            #expect(other.isClosedByServer())
        }
    }

    @Test("the token is checked on the headers, before the body: 401 without one, 403 for another bundle's")
    func authenticationBeforeBody() async throws {
        let grant = AccessPolicy.Grant(label: "demo", token: "CTX-123456789ABCD", bundleIDs: ["com.contextsdk.demo"])
        try await withServer(tokens: [grant]) { port async throws in
            let client = try HTTP1TestClient(port: port)
            // The body is declared and never sent: the answer cannot have waited for it.
            client.send("POST \(Self.schedulePath) HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
            let missing = client.readResponse()
            #expect(missing?.status == 401)
            #expect(missing?.text.contains("UNAUTHENTICATED") == true)
            #expect(client.isClosedByServer())

            let wrong = try HTTP1TestClient(port: port)
            wrong.send("POST \(Self.schedulePath) HTTP/1.1\r\nHost: x\r\nAuthorization: Token nope\r\nContent-Length: 1000\r\n\r\n")
            #expect(wrong.readResponse()?.status == 401)

            let other = try HTTP1TestClient(port: port)
            let body = #"{"bundle_id":"com.other.app","platform":"ios","user_id":"u","campaign_id":"c","idempotency_key":"k"}"#
            other.send("POST /v1/campaigns/cancel_message_for_user HTTP/1.1\r\nHost: x\r\nAuthorization: Token CTX-123456789ABCD\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
            let denied = other.readResponse()
            #expect(denied?.status == 403)
            #expect(denied?.text.contains("PERMISSION_DENIED") == true)
        }
    }

    @Test("a bad JSON body is a 400 naming the field; the connection stays open for the next request")
    func badJSONKeepsConnection() async throws {
        try await withServer { port async throws in
            let client = try HTTP1TestClient(port: port)
            let body = #"{"bundle_id":"com.contextsdk.demo","platfrom":"ios"}"#
            client.send("POST \(Self.schedulePath) HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            let response = client.readResponse()
            #expect(response?.status == 400)
            #expect(response?.text.contains(#""field":"platfrom""#) == true)
            client.send("POST \(Self.schedulePath) HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n[]")
            #expect(client.readResponse()?.text.contains("must be a JSON object") == true)
        }
    }

    @Test("on shutdown a keep-alive HTTP/1.1 connection is closed between requests, well before the drain timeout")
    func drainClosesIdleKeepAlive() async throws {
        try await withTemporaryDirectory(prefix: "herald-web-drain") { directory in
            var configuration = HeraldConfiguration()
            configuration.port = 0
            configuration.dataDirectory = directory
            configuration.drainTimeout = .seconds(60)
            let server = HeraldServer(configuration: configuration, logger: Logger(label: "test"))
            try await server.withRunning { address async throws in
                let client = try HTTP1TestClient(port: address.port)
                client.send("POST \(Self.schedulePath) HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n[]")
                #expect(client.readResponse()?.status == 400)
                // Read on a thread of its own: a blocking read on the test's
                // task would hold a cooperative thread the shutdown needs.
                let closed = await withCheckedContinuation { continuation in
                    DispatchQueue.global().async { continuation.resume(returning: client.isClosedByServer()) }
                    Task { await server.shutdown() }
                }
                // Closed by the drain (the 10 s read bound is far below its 60 s timeout).
                #expect(closed)
            }
        }
    }

    @Test("Expect: 100-continue gets 100 Continue once the headers are admitted, then the answer")
    func expectContinue() async throws {
        try await withServer { port async throws in
            let client = try HTTP1TestClient(port: port)
            let body = "[]"
            client.send("POST \(Self.schedulePath) HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
            #expect(client.readResponse()?.status == 100)
            client.send(body)
            #expect(client.readResponse()?.status == 400)
        }
    }
}
