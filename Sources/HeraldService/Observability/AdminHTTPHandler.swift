import NIOCore
import NIOHTTP1

/// Answers one admin connection's requests: GET or HEAD on `/metrics`,
/// `/healthz`, `/readyz`; 405 for other methods on them, 404 elsewhere.
/// Every answer has a short text body; a request body is never read (the
/// byte budget bounds it).
final class AdminHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let endpoints: AdminEndpoints
    let budget: AdminRequestBudget
    let requestTimeout: TimeAmount
    private var head: HTTPRequestHead?
    private var timer: Scheduled<Void>?

    init(endpoints: AdminEndpoints, budget: AdminRequestBudget, requestTimeout: TimeAmount) {
        self.endpoints = endpoints
        self.budget = budget
        self.requestTimeout = requestTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        armTimer(context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    /// The next request must be complete within `requestTimeout`.
    private func armTimer(_ context: ChannelHandlerContext) {
        timer?.cancel()
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: requestTimeout) { channel.close(promise: nil) }
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
            respond(context, head)
        }
    }

    private func respond(_ context: ChannelHandlerContext, _ head: HTTPRequestHead) {
        let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let known = ["/metrics", "/healthz", "/readyz"].contains(path)
        var status = HTTPResponseStatus.ok
        var contentType = "text/plain; charset=utf-8"
        var body: [UInt8]
        var extra: [(String, String)] = []
        if !known {
            status = .notFound
            body = Array("not found: try /metrics, /healthz or /readyz\n".utf8)
        } else if head.method != .GET && head.method != .HEAD {
            status = .methodNotAllowed
            extra.append(("Allow", "GET, HEAD"))
            body = Array("method not allowed: use GET\n".utf8)
        } else {
            switch path {
            case "/metrics":
                contentType = "text/plain; version=0.0.4; charset=utf-8"
                body = endpoints.metrics.render()
            case "/healthz":
                let alive = endpoints.alive()
                status = alive ? .ok : .serviceUnavailable
                body = Array((alive ? "ok\n" : "stopped\n").utf8)
            default:
                let readiness = endpoints.state.readiness
                if readiness.isReady {
                    body = Array("ready\n".utf8)
                } else {
                    status = .serviceUnavailable
                    let why = readiness.state != .serving ? "\(readiness.state)" : "store not writable"
                    body = Array("not ready: \(why)\n".utf8)
                }
            }
        }
        let keepAlive = head.isKeepAlive && status != .methodNotAllowed
        var headers = HTTPHeaders([("Content-Type", contentType), ("Content-Length", String(body.count))] + extra)
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        if head.method != .HEAD {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        }
        let channel = context.channel
        let done = context.eventLoop.makePromise(of: Void.self)
        if !keepAlive { done.futureResult.whenComplete { _ in channel.close(promise: nil) } }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: done)
        budget.used = 0
        armTimer(context)
    }
}
