import GRPCEngine
import NIOCore
import NIOHTTP1

/// Counts the bytes of a request's line and headers before the HTTP parser
/// sees them, and tells the handler that a request has begun (its timer
/// changes from idle to request).
final class WebReadWatch: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let limit: Int
    /// True between requests and while a request's head arrives.
    var headerPhase = true
    private var headerBytes = 0
    var onBytes: (() -> Void)?

    init(limit: Int) { self.limit = limit }

    /// A request's head has been parsed (or it has ended): counting starts over.
    func reset(headerPhase: Bool) {
        self.headerPhase = headerPhase
        headerBytes = 0
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if headerPhase {
            headerBytes += unwrapInboundIn(data).readableBytes
            guard headerBytes <= limit else {
                context.close(promise: nil)
                return
            }
        }
        onBytes?()
        context.fireChannelRead(data)
    }
}

/// The HTTP/1.1 requests of one connection on the gRPC port: routes them to
/// the ContextPush web API or to a Connect unary call, checks the token on
/// the headers (before the body), bounds the body and the time a request may
/// take, and answers JSON (or, for Connect's `application/proto`, protobuf).
final class WebHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// What an admitted request's body goes to.
    private enum Target {
        case contextPush(ContextPushAPI.Endpoint, GRPCMetadata)
        case connect(ConnectAPI.Call)
    }

    private enum State {
        /// Waiting for a request's head.
        case idle
        /// Reading an admitted request's body.
        case receiving(Target, keepAlive: Bool, body: ByteBuffer)
        /// Reading (and dropping) the body of a request answered with this
        /// error at its end (404, 405), after which the connection closes.
        case rejected(WebAPIError, dropped: Int)
        /// The answer is being computed.
        case answering
        /// An answer that closes the connection was written: the rest is ignored.
        case closing
    }

    private let api: ContextPushAPI
    /// Connect unary calls (nil: only the ContextPush endpoints).
    private let connect: ConnectAPI?
    private let limits: WebLimits
    private let watch: WebReadWatch
    private var state = State.idle
    private var timer: Scheduled<Void>?
    /// True while the request timer (not the idle timer) runs.
    private var requestTimerArmed = false
    /// The server is shutting down: the next answer closes the connection.
    private var draining = false

    init(api: ContextPushAPI, connect: ConnectAPI? = nil, limits: WebLimits, watch: WebReadWatch) {
        self.api = api
        self.connect = connect
        self.limits = limits
        self.watch = watch
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        watch.onBytes = { [weak self] in self?.bytesArrived(context: loopBound.value) }
        // The first bytes are already here (they decided the protocol).
        armTimer(context: context, request: true)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        watch.onBytes = nil
    }

    private func bytesArrived(context: ChannelHandlerContext) {
        if case .idle = state, !requestTimerArmed { armTimer(context: context, request: true) }
    }

    private func armTimer(context: ChannelHandlerContext, request: Bool) {
        timer?.cancel()
        requestTimerArmed = request
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: TimeAmount(request ? limits.requestTimeout : limits.idleTimeout)) {
            let (handler, context) = loopBound.value
            handler.timedOut(context: context)
        }
    }

    private func timedOut(context: ChannelHandlerContext) {
        timer = nil
        // A 408 only once a head was parsed (NIO's pipelining handler takes
        // no answer before one); a request still in its headers is just closed.
        let headParsed: Bool
        switch state {
        case .receiving, .rejected: headParsed = true
        case .idle, .answering, .closing: headParsed = false
        }
        if headParsed {
            respond(context: context, WebAPIError(
                .deadlineExceeded, "the request did not arrive within \(limits.requestTimeout)", httpStatus: 408), keepAlive: false)
        } else {
            context.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): received(head, context: context)
        case .body(let chunk): received(chunk, context: context)
        case .end: ended(context: context)
        }
    }

    private func received(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        guard case .idle = state else { return }
        watch.reset(headerPhase: false)
        if !requestTimerArmed { armTimer(context: context, request: true) }
        let keepAlive = head.isKeepAlive
        let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        if ContextPushAPI.endpoints[path] == nil, let connect, connect.handles(path) {
            receivedConnect(head, path: path, connect: connect, keepAlive: keepAlive, context: context)
            return
        }
        guard let endpoint = ContextPushAPI.endpoints[path] else {
            let shown = path.count > 64 ? "\(path.prefix(64))…" : path
            state = .rejected(WebAPIError(
                .notFound, "no endpoint at \(shown): POST \(ContextPushAPI.schedulePath) or \(ContextPushAPI.cancelPath)",
                httpStatus: 404), dropped: 0)
            return
        }
        guard head.method == .POST else {
            state = .rejected(WebAPIError(.unimplemented, "\(path) takes POST only", httpStatus: 405), dropped: 0)
            return
        }
        var metadata = GRPCMetadata()
        for value in head.headers["authorization"] { metadata.append(name: "authorization", value: value) }
        if let admission = api.admission, let refusal = admission(metadata) {
            // Refused before the body is read: the connection closes rather than reading it.
            respond(context: context, WebAPIError(refusal), keepAlive: false)
            return
        }
        if let declared = head.headers.first(name: "content-length").flatMap(Int.init), declared > limits.maxBodyBytes {
            respond(context: context, tooLarge, keepAlive: false)
            return
        }
        admitted(.contextPush(endpoint, metadata), head, keepAlive: keepAlive, context: context)
    }

    /// A request for a Connect method: its head checked (codec, version,
    /// timeout, encoding, token) before the body is read.
    private func receivedConnect(
        _ head: HTTPRequestHead, path: String, connect: ConnectAPI, keepAlive: Bool, context: ChannelHandlerContext
    ) {
        let headers = head.headers.map { ($0.name, $0.value) }
        switch connect.admit(path: path, method: head.method.rawValue, headers: headers) {
        case .failure(let answer):
            // Answered before the body is read: the connection closes rather than reading it.
            write(context: context, answer, keepAlive: false)
        case .success(let call):
            if let declared = head.headers.first(name: "content-length").flatMap(Int.init), declared > call.maxBodyBytes {
                write(context: context, connectTooLarge(call.maxBodyBytes), keepAlive: false)
                return
            }
            admitted(.connect(call), head, keepAlive: keepAlive, context: context)
        }
    }

    private func admitted(_ target: Target, _ head: HTTPRequestHead, keepAlive: Bool, context: ChannelHandlerContext) {
        state = .receiving(target, keepAlive: keepAlive, body: context.channel.allocator.buffer(capacity: 0))
        // Admitted (token, size): a client waiting to send its body may (RFC 9110 §10.1.1).
        if head.headers["expect"].contains(where: { $0.lowercased() == "100-continue" }) {
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .continue))), promise: nil)
        }
    }

    private var tooLarge: WebAPIError {
        WebAPIError(.resourceExhausted, "the body is larger than \(limits.maxBodyBytes) bytes", httpStatus: 413)
    }

    private func connectTooLarge(_ limit: Int) -> ConnectAnswer {
        .error(.resourceExhausted, "the body is larger than \(limit) bytes")
    }

    private func received(_ chunk: ByteBuffer, context: ChannelHandlerContext) {
        switch state {
        case .receiving(let target, let keepAlive, var body):
            var bound = limits.maxBodyBytes
            if case .connect(let call) = target { bound = call.maxBodyBytes }
            guard body.readableBytes + chunk.readableBytes <= bound else {
                if case .connect = target {
                    write(context: context, connectTooLarge(bound), keepAlive: false)
                } else {
                    respond(context: context, tooLarge, keepAlive: false)
                }
                return
            }
            state = .answering  // drops the state's reference to `body` before the write (no copy)
            var chunk = chunk
            body.writeBuffer(&chunk)
            state = .receiving(target, keepAlive: keepAlive, body: body)
        case .rejected(let error, let dropped):
            let total = dropped + chunk.readableBytes
            guard total <= limits.maxBodyBytes else {
                respond(context: context, tooLarge, keepAlive: false)
                return
            }
            state = .rejected(error, dropped: total)
        default:
            return
        }
    }

    private func ended(context: ChannelHandlerContext) {
        watch.reset(headerPhase: true)
        switch state {
        case .receiving(let target, let keepAlive, let body):
            state = .answering
            timer?.cancel()
            timer = nil
            requestTimerArmed = false
            let remote = context.channel.remoteAddress.flatMap { address in address.ipAddress.map { "\($0):\(address.port ?? 0)" } }
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let endpoint: ContextPushAPI.Endpoint, metadata: GRPCMetadata
            switch target {
            case .connect(let call):
                connect?.run(call, body: Array(body.readableBytesView), remoteAddress: remote, on: context.eventLoop).whenSuccess { answer in
                    let (handler, context) = loopBound.value
                    guard case .answering = handler.state else { return }
                    handler.write(context: context, answer, keepAlive: keepAlive)
                }
                return
            case .contextPush(let pushEndpoint, let pushMetadata):
                (endpoint, metadata) = (pushEndpoint, pushMetadata)
            }
            api.call(
                endpoint, body: Array(body.readableBytesView), metadata: metadata, remoteAddress: remote,
                deadline: .now + limits.requestTimeout, on: context.eventLoop
            ).whenComplete { result in
                let (handler, context) = loopBound.value
                guard case .answering = handler.state else { return }
                switch result {
                case .success(let json): handler.write(context: context, status: .ok, json, keepAlive: keepAlive)
                case .failure(let error as WebAPIError): handler.respond(context: context, error, keepAlive: keepAlive)
                case .failure: handler.respond(context: context, WebAPIError(.internalError, "internal error"), keepAlive: keepAlive)
                }
            }
        case .rejected(let error, _):
            // Not a web API call (a stray client or a scan of the gRPC port): answered, then closed.
            respond(context: context, error, keepAlive: false)
        default:
            return
        }
    }

    private func respond(context: ChannelHandlerContext, _ error: WebAPIError, keepAlive: Bool) {
        var headers: [(String, String)] = []
        if error.status == 405 { headers.append(("allow", "POST")) }
        write(context: context, status: HTTPResponseStatus(statusCode: error.status), error.body, keepAlive: keepAlive, extra: headers)
    }

    private func write(context: ChannelHandlerContext, _ answer: ConnectAnswer, keepAlive: Bool) {
        write(context: context, status: HTTPResponseStatus(statusCode: answer.status), answer.body, keepAlive: keepAlive,
              contentType: answer.contentType)
    }

    private func write(
        context: ChannelHandlerContext, status: HTTPResponseStatus, _ json: [UInt8], keepAlive: Bool, extra: [(String, String)] = [],
        contentType: String = "application/json"
    ) {
        guard context.channel.isActive else { return }
        if case .closing = state { return }
        let keepAlive = keepAlive && !draining
        var headers = HTTPHeaders([("content-type", contentType), ("content-length", "\(json.count)")] + extra)
        if !keepAlive { headers.add(name: "connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: json)))), promise: nil)
        if keepAlive {
            state = .idle
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            armTimer(context: context, request: false)
        } else {
            state = .closing
            timer?.cancel()
            timer = nil
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is GRPCServerDraining else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        draining = true
        // Between requests: closed now; otherwise after the answer in flight.
        if case .idle = state, !requestTimerArmed { context.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
