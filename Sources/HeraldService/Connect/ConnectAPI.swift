import GRPCEngine
import HeraldClient
import NIOCore
import Synchronization

/// The Connect protocol, unary (connectrpc.com/docs/protocol), on the gRPC
/// port over HTTP/1.1 and HTTP/2: `POST /<package.Service>/<Method>` with
/// `application/json` (the proto3 JSON mapping) or `application/proto`.
/// Each call runs the method's own registered gRPC handler, behind the same
/// admission (token) as a gRPC call: one implementation per RPC. The head is
/// checked (path, codec, `Connect-Protocol-Version`, `Connect-Timeout-Ms`,
/// encoding, token) before the body is read.
final class ConnectAPI: Sendable {
    /// A call admitted on its head, waiting for its body.
    struct Call: Sendable {
        let method: ProtoServices.Method
        let handler: GRPCUnaryHandler
        let json: Bool
        let gzip: Bool
        let metadata: GRPCMetadata
        /// From `Connect-Timeout-Ms`, counted from the head.
        let deadline: ContinuousClock.Instant?
        /// The body's bound: gRPC's message limit, or the smaller one of
        /// methods callable without a token.
        let maxBodyBytes: Int
    }

    private let server: GRPCServer
    /// The largest body, compressed or inflated (the gRPC limit).
    let maxBodyBytes: Int
    /// The same for methods callable without a token (Health, Status).
    let unauthenticatedMaxBodyBytes: Int

    init(server: GRPCServer, maxBodyBytes: Int, unauthenticatedMaxBodyBytes: Int) {
        self.server = server
        self.maxBodyBytes = maxBodyBytes
        self.unauthenticatedMaxBodyBytes = unauthenticatedMaxBodyBytes
    }

    /// True for a path Connect answers: a method of `Protos/`, one registered
    /// on the server, or any other under one of their services (a 404 in
    /// Connect's form).
    func handles(_ path: String) -> Bool {
        if ProtoServices.methods[path] != nil || server.registeredRoute(path) != nil { return true }
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return false }
        return Self.services.contains(String(path[..<slash]))
    }

    /// `/herald.v1.PushService` and the other services' path prefixes.
    private static let services = Set(ProtoServices.methods.keys.compactMap { path in
        path.lastIndex(of: "/").map { String(path[..<$0]) }
    })

    /// Checks a request's head: the call to run once its body arrives, or the answer.
    func admit(path: String, method: String, headers: [(String, String)]) -> Result<Call, ConnectAnswer> {
        guard method == "POST" else {
            return .failure(.error(.unimplemented, "Connect unary calls are POST requests", httpStatus: 405))
        }
        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name }?.1 }
        let contentType = (header("content-type") ?? "").split(separator: ";").first.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        let json: Bool
        switch contentType {
        case "application/json": json = true
        case "application/proto": json = false
        default:
            return .failure(.error(.unknown, "content-type must be application/json or application/proto (Connect) or application/grpc (gRPC)", httpStatus: 415))
        }
        if let version = header("connect-protocol-version"), version.trimmingCharacters(in: .whitespaces) != "1" {
            return .failure(.error(.invalidArgument, "connect-protocol-version must be 1"))
        }
        var deadline: ContinuousClock.Instant?
        if let text = header("connect-timeout-ms")?.trimmingCharacters(in: .whitespaces) {
            guard (1...10).contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let ms = Int64(text) else {
                return .failure(.error(.invalidArgument, "connect-timeout-ms must be a positive integer of at most 10 digits"))
            }
            deadline = .now + .milliseconds(ms)
        }
        var gzip = false
        switch (header("content-encoding") ?? "identity").trimmingCharacters(in: .whitespaces).lowercased() {
        case "identity", "": break
        case "gzip": gzip = true
        case let other:
            return .failure(.error(.unimplemented, "content-encoding \(other.prefix(32)) is not supported: use identity or gzip"))
        }
        guard let route = server.registeredRoute(path) else {
            if ProtoServices.methods[path] != nil { return .failure(.error(.unavailable, "not serving yet")) }
            return .failure(.error(.unimplemented, "no method at \(path.prefix(80))", httpStatus: 404))
        }
        guard let handler = route.unary, let protoMethod = ProtoServices.methods[path] else {
            return .failure(.error(
                .unimplemented, "\(path.prefix(80)) is a streaming method: Connect unary cannot call it; use gRPC (e.g. grpcurl)"))
        }
        var metadata = GRPCMetadata()
        for (name, value) in headers where name.lowercased() == "authorization" {
            metadata.append(name: "authorization", value: value)
        }
        if let admission = route.admission, let refusal = admission(metadata) { return .failure(.error(refusal)) }
        return .success(Call(
            method: protoMethod, handler: handler, json: json, gzip: gzip, metadata: metadata, deadline: deadline,
            maxBodyBytes: route.unauthenticated ? min(unauthenticatedMaxBodyBytes, maxBodyBytes) : maxBodyBytes))
    }

    /// Runs an admitted call on its body; completes on `loop` (never fails).
    func run(_ call: Call, body: [UInt8], remoteAddress: String?, on loop: any EventLoop) -> EventLoopFuture<ConnectAnswer> {
        var body = body
        if call.gzip {
            do {
                body = try GRPCGzip.decompress(body, limit: call.maxBodyBytes)
            } catch {
                return loop.makeSucceededFuture(.error(error.code, "request body: \(error.message)"))
            }
        }
        let message: [UInt8]
        if call.json {
            do {
                message = try ProtoJSONReader.pack(call.method.request, json: body)
            } catch {
                return loop.makeSucceededFuture(.error(.invalidArgument, "\(error)"))
            }
        } else {
            message = body
        }
        if let deadline = call.deadline, deadline <= .now {
            return loop.makeSucceededFuture(.error(.deadlineExceeded, "the deadline (connect-timeout-ms) passed"))
        }
        let request = GRPCRequest(
            path: call.method.path, metadata: call.metadata, message: message, deadline: call.deadline, remoteAddress: remoteAddress)
        let promise = loop.makePromise(of: ConnectAnswer.self)
        let server = self.server
        let started = ContinuousClock.now
        // The handler's answer or the deadline, whichever comes first.
        let answered = Mutex(false)
        let answer: @Sendable (ConnectAnswer) -> Void = { reply in
            if answered.withLock({ done in defer { done = true }; return !done }) { promise.succeed(reply) }
        }
        call.handler.callInProcess(request, on: loop) { result in
            var code = GRPCStatus.Code.ok
            let reply: ConnectAnswer
            do {
                let bytes = try result.get()
                if call.json {
                    reply = ConnectAnswer(status: 200, contentType: "application/json", body: try ProtoJSON.proto3(call.method.reply, bytes))
                } else {
                    reply = ConnectAnswer(status: 200, contentType: "application/proto", body: bytes)
                }
            } catch let status as GRPCStatus {
                code = status.code
                reply = .error(status)
            } catch is CancellationError {
                code = .cancelled
                reply = .error(.cancelled, "cancelled")
            } catch {
                code = .internalError
                reply = .error(.internalError, "internal error")
            }
            let (seconds, attoseconds) = (ContinuousClock.now - started).components
            server.recordInProcessCall(request, code: code, durationNanoseconds: seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000)
            answer(reply)
        }
        if let deadline = call.deadline {
            let timer = loop.scheduleTask(in: TimeAmount(deadline - .now)) {
                answer(.error(.deadlineExceeded, "the deadline (connect-timeout-ms) passed"))
            }
            promise.futureResult.whenComplete { _ in timer.cancel() }
        }
        return promise.futureResult
    }
}

/// Holds the ``ConnectAPI`` made once the server exists (the server's
/// configuration, which hands it to connections, is built first).
final class ConnectBox: Sendable {
    private let cell = Mutex<ConnectAPI?>(nil)

    /// Set once, before the server starts; read by each connection.
    var api: ConnectAPI? {
        get { cell.withLock { $0 } }
        set { cell.withLock { $0 = newValue } }
    }
}

extension ConnectAPI {
    /// The engine's hook for HTTP/2 requests that are not gRPC: Connect
    /// takes a POST to one of its paths with any content type (a wrong one
    /// is answered 415 in Connect's form); any other path keeps the engine's 415.
    var plainCalls: GRPCPlainCalls {
        GRPCPlainCalls(
            admit: { [self] path, contentType, metadata in
                guard handles(path) else { return nil }
                let headers = [("content-type", contentType)] + metadata.map { ($0.name, $0.value) }
                switch admit(path: path, method: "POST", headers: headers) {
                case .failure(let answer): return .answer(answer.plain)
                case .success(let call):
                    return .call { [self] body, remote, loop in
                        run(call, body: body, remoteAddress: remote, on: loop).map(\.plain)
                    }
                }
            },
            refusal: { status in ConnectAnswer.error(status).plain })
    }
}

extension ConnectAnswer {
    /// As the engine's plain answer.
    var plain: GRPCPlainAnswer { GRPCPlainAnswer(status: status, contentType: contentType, body: body) }
}
