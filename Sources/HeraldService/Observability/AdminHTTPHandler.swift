import NIOCore
import NIOHTTP1

/// Answers one admin connection's requests: GET or HEAD on `/metrics`,
/// `/healthz`, `/readyz`, and the operator console (``ConsoleService``) at
/// `/` and `/console/...` when it is on; 405 for other methods on them, 404
/// elsewhere. A request body is never read (the byte budget bounds it).
///
/// Backpressure: one answer at a time, and the next request is read only
/// once the last answer has been written to the socket. A client that
/// pipelines requests and never reads therefore holds at most one answer
/// in this process (the rest of its requests wait in its own socket
/// buffers), and the request timeout closes it. Reads are held by not
/// passing `read()` on (`autoRead` asks through this handler, the last in
/// the pipeline), so a transport handler in front (TLS) changes nothing.
final class AdminHTTPHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    let endpoints: AdminEndpoints
    let metrics: AdminMetricsCache
    let budget: AdminRequestBudget
    let requestTimeout: TimeAmount
    private var head: HTTPRequestHead?
    private var timer: Scheduled<Void>?
    /// An answer is being written and has not reached the socket yet.
    private var writing = false
    /// A request that arrived while `writing` (at most one: the pipelining
    /// handler hands over the next request only after an answer's end).
    private var waiting: HTTPRequestHead?
    /// A `read()` held back while `writing`.
    private var readHeld = false
    private var removed = false

    init(endpoints: AdminEndpoints, metrics: AdminMetricsCache, budget: AdminRequestBudget, requestTimeout: TimeAmount) {
        self.endpoints = endpoints
        self.metrics = metrics
        self.budget = budget
        self.requestTimeout = requestTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        armTimer(context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        removed = true
        timer?.cancel()
        timer = nil
    }

    /// The next request must be complete, and the last answer written,
    /// within `requestTimeout`.
    private func armTimer(_ context: ChannelHandlerContext) {
        timer?.cancel()
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: requestTimeout) { channel.close(promise: nil) }
    }

    func read(context: ChannelHandlerContext) {
        if writing || waiting != nil {
            readHeld = true
        } else {
            context.read()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body:
            break
        case .end:
            guard let head else { return }
            self.head = nil
            if writing {
                guard waiting == nil else {
                    // Cannot happen behind the pipelining handler; never queue more than one.
                    context.close(promise: nil)
                    return
                }
                waiting = head
            } else {
                respond(context, head)
            }
        }
    }

    /// The last answer reached the socket (or failed): answer the request
    /// that waited, else let reading resume.
    private func written(_ context: ChannelHandlerContext, _ result: Result<Void, any Error>, keepAlive: Bool) {
        writing = false
        guard !removed else { return }
        guard case .success = result, keepAlive else {
            context.close(promise: nil)
            return
        }
        if let next = waiting {
            waiting = nil
            // Not from inside the previous write's completion: a client that
            // reads as fast as it pipelines would otherwise nest one answer
            // per request on the stack.
            context.eventLoop.assumeIsolated().execute {
                guard !self.removed else { return }
                self.respond(context, next)
            }
            return
        }
        if readHeld {
            readHeld = false
            context.read()
        }
    }

    private func respond(_ context: ChannelHandlerContext, _ head: HTTPRequestHead) {
        // Set before anything is written: the pipelining handler hands over
        // the next request from inside the write of `.end`, and the write
        // may complete inside the flush; a console page is also prepared
        // off the loop meanwhile.
        writing = true
        budget.answering = true
        if let console = endpoints.console {
            do throws(ConsoleRefusal) {
                if let request = try ConsoleRequest.parse(uri: head.uri) {
                    guard head.method == .GET || head.method == .HEAD else {
                        throw ConsoleRefusal(.methodNotAllowed, "method not allowed: the console answers GET")
                    }
                    let authorization = head.headers.first(name: "authorization")
                    let page = context.eventLoop.makeFutureWithTask { await console.respond(request, authorization: authorization) }
                    page.assumeIsolated().whenComplete { result in
                        guard !self.removed else { return }
                        let response = (try? result.get())
                            ?? ConsoleService.refused(ConsoleRefusal(.internalError, "the page could not be made"))
                        self.send(context, head, status: HTTPResponseStatus(statusCode: response.status),
                                  headers: response.headers, body: ByteBuffer(string: response.body))
                    }
                    return
                }
            } catch {
                let response = ConsoleService.refused(error)
                send(context, head, status: HTTPResponseStatus(statusCode: response.status),
                     headers: response.headers, body: ByteBuffer(string: response.body))
                return
            }
        }
        let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let known = ["/metrics", "/healthz", "/readyz"].contains(path)
        var status = HTTPResponseStatus.ok
        var contentType = "text/plain; charset=utf-8"
        let body: ByteBuffer
        var extra: [(String, String)] = []
        if !known {
            status = .notFound
            body = ByteBuffer(string: endpoints.console == nil
                ? "not found: try /metrics, /healthz or /readyz\n" : "not found: try /, /metrics, /healthz or /readyz\n")
        } else if head.method != .GET && head.method != .HEAD {
            status = .methodNotAllowed
            extra.append(("Allow", "GET, HEAD"))
            body = ByteBuffer(string: "method not allowed: use GET\n")
        } else {
            switch path {
            case "/metrics":
                contentType = "text/plain; version=0.0.4; charset=utf-8"
                // Rendered at most once a second, shared by every connection.
                body = metrics.body()
            case "/healthz":
                let alive = endpoints.alive()
                status = alive ? .ok : .serviceUnavailable
                body = ByteBuffer(string: alive ? "ok\n" : "stopped\n")
            default:
                let readiness = endpoints.state.readiness
                if readiness.isReady {
                    body = ByteBuffer(string: "ready\n")
                } else {
                    status = .serviceUnavailable
                    let why = readiness.state != .serving ? "\(readiness.state)" : "store not writable"
                    body = ByteBuffer(string: "not ready: \(why)\n")
                }
            }
        }
        send(context, head, status: status, headers: [("Content-Type", contentType)] + extra, body: body)
    }

    /// Writes one answer; reading resumes (or the waiting request is
    /// answered) once it reached the socket.
    private func send(
        _ context: ChannelHandlerContext, _ head: HTTPRequestHead, status: HTTPResponseStatus, headers extra: [(String, String)],
        body: ByteBuffer
    ) {
        let keepAlive = head.isKeepAlive && status != .methodNotAllowed
        var headers = HTTPHeaders(extra + [("Content-Length", String(body.readableBytes))])
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        budget.used = 0
        armTimer(context)
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        if head.method != .HEAD {
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        }
        let done = context.eventLoop.makePromise(of: Void.self)
        done.futureResult.assumeIsolated().whenComplete { result in
            self.budget.answering = false
            self.written(context, result, keepAlive: keepAlive)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: done)
    }
}
