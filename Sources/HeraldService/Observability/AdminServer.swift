import Logging
public import TLSTransport
import GRPCEngine
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// The admin listener's settings.
public struct AdminConfiguration: Sendable {
    public var host = "127.0.0.1"
    /// 0 picks a free port.
    public var port = 0
    /// Most admin connections open at once; more are closed on accept.
    public var maxConnections = 32
    /// Most admin connections one peer address may hold open; more from it
    /// are closed on accept, so one client cannot take every slot (and
    /// shut a liveness probe out of `/healthz`).
    public var maxConnectionsPerPeer = 8
    /// How long one rendering of `/metrics` is served to every scraper.
    public var metricsInterval: Duration = .seconds(1)
    /// Bytes a connection may send for one request (head and body); past it
    /// the connection is closed.
    public var maxRequestBytes = 8 * 1024
    /// Time a connection has to send a whole request (after it opens or after
    /// the previous answer); past it the connection is closed. Bounds both
    /// idle connections and slowloris.
    public var requestTimeout: Duration = .seconds(5)
    /// TLS (HTTP/1.1, the gRPC listener's certificate); nil: plain HTTP.
    public var tls: ServerTLS?

    public init() {}
}

/// What the admin endpoints read.
struct AdminEndpoints: Sendable {
    let metrics: HeraldMetrics
    let state: ServingStateCell
    /// Whether the process's loops still run (`/healthz`).
    let alive: @Sendable () -> Bool
    /// The operator console at `/` and `/console/...`; nil: those are 404.
    var console: ConsoleService? = nil
}

/// `/metrics`, `/healthz` and `/readyz` over HTTP/1.1 (NIOHTTP1) on a loop of
/// its own, so a scrape never waits behind gRPC work and the reverse.
final class AdminServer: Sendable {
    let configuration: AdminConfiguration
    let endpoints: AdminEndpoints
    let logger: Logger
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let channel = Mutex<(any Channel)?>(nil)
    /// Samples the console's history every 5 s (each 10 s step gets one;
    /// the history ignores a second sample in a step).
    private let sampler = Mutex<RepeatedTask?>(nil)
    let openConnections = Atomic<Int>(0)
    /// Open connections per peer address.
    private let peers = Mutex<[String: Int]>([:])
    /// `/metrics` as last rendered, shared by every connection.
    let metrics: AdminMetricsCache

    init(configuration: AdminConfiguration, endpoints: AdminEndpoints, logger: Logger) {
        self.configuration = configuration
        self.endpoints = endpoints
        self.logger = logger
        let registry = endpoints.metrics
        metrics = AdminMetricsCache(interval: configuration.metricsInterval) { registry.render() }
    }

    /// Counts a new connection against the global and the per-peer limits
    /// (released when it closes); false when it is over either.
    private func admit(_ channel: any Channel) -> Bool {
        let open = openConnections.wrappingAdd(1, ordering: .relaxed).newValue
        let peer = channel.remoteAddress?.ipAddress ?? "unknown"
        let fromPeer = peers.withLock { peers in
            let count = peers[peer, default: 0] + 1
            peers[peer] = count
            return count
        }
        channel.closeFuture.whenComplete { _ in
            self.openConnections.subtract(1, ordering: .relaxed)
            self.peers.withLock { peers in
                let count = (peers[peer] ?? 1) - 1
                peers[peer] = count > 0 ? count : nil
            }
        }
        return open <= configuration.maxConnections && fromPeer <= configuration.maxConnectionsPerPeer
    }

    /// The handlers of one admitted connection, appended to its pipeline: a
    /// transport handler (TLS) goes in front of them, before this runs or
    /// at `.first`.
    func configureConnection(_ channel: any Channel) throws {
        let budget = AdminRequestBudget(limit: configuration.maxRequestBytes)
        let sync = channel.pipeline.syncOperations
        if let tls = configuration.tls {
            try sync.addHandler(tls.makeHandler(for: .http1, handshakeTimeout: configuration.requestTimeout))
        }
        try sync.addHandler(AdminByteCounter(budget: budget))
        try sync.configureHTTPServerPipeline(withPipeliningAssistance: true, withErrorHandling: true)
        try sync.addHandler(AdminHTTPHandler(
            endpoints: endpoints, metrics: metrics, budget: budget, requestTimeout: TimeAmount(configuration.requestTimeout)))
    }

    /// Binds; returns the bound address.
    func start() async throws -> (host: String, port: Int) {
        let configuration = configuration
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    guard admit(channel) else {
                        channel.close(promise: nil)
                        return
                    }
                    try configureConnection(channel)
                }
            }
        do {
            let bound = try await bootstrap.bind(host: configuration.host, port: configuration.port).get()
            channel.withLock { $0 = bound }
            let port = bound.localAddress?.port ?? configuration.port
            let host = bound.localAddress?.ipAddress ?? configuration.host
            logger.info("admin listener up", metadata: ["address": "\(host):\(port)"])
            if let console = endpoints.console {
                let half = TimeAmount.milliseconds(ConsoleHistory.stepMilliseconds / 2)
                let task = group.next().scheduleRepeatedTask(initialDelay: .zero, delay: half) { _ in console.sample() }
                sampler.withLock { $0 = task }
            }
            return (host, port)
        } catch {
            try? await group.shutdownGracefully()
            throw ListenError(host: configuration.host, port: configuration.port, error: error)
        }
    }

    func stop() async {
        let bound = channel.withLock { channel in
            defer { channel = nil }
            return channel
        }
        sampler.withLock { task in
            task?.cancel()
            task = nil
        }
        try? await bound?.close()
        try? await group.shutdownGracefully()
    }
}

/// Request bytes a connection has sent since its last answer.
final class AdminRequestBudget {
    let limit: Int
    var used = 0
    /// An answer is being prepared or written (set by the HTTP handler):
    /// nothing else may be written on the connection meanwhile.
    var answering = false

    init(limit: Int) { self.limit = limit }
}

/// Stops a connection that sends more than its budget for one request
/// (huge headers, a 1 MB query, a body): the HTTP parser never buffers more
/// than that. Between answers the client is told why (414 and a sentence,
/// then the write side is shut and the rest of its bytes dropped until the
/// request timeout closes it, so the answer is not lost to a reset); while
/// an answer is under way the connection is closed.
final class AdminByteCounter: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    let budget: AdminRequestBudget
    private var refused = false

    init(budget: AdminRequestBudget) { self.budget = budget }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        budget.used += unwrapInboundIn(data).readableBytes
        guard budget.used <= budget.limit else {
            refused = true
            guard !budget.answering else {
                context.close(promise: nil)
                return
            }
            let body = "request too large: the admin listener takes at most \(budget.limit) bytes a request\n"
            let answer = "HTTP/1.1 414 URI Too Long\r\nContent-Type: text/plain; charset=utf-8\r\n"
                + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
            context.writeAndFlush(NIOAny(ByteBuffer(string: answer))).assumeIsolated().whenComplete { _ in
                context.close(mode: .output, promise: nil)
            }
            return
        }
        context.fireChannelRead(data)
    }
}

/// `/metrics` rendered at most once per `interval` and shared: scrapers
/// (or an attacker) asking faster get the same bytes, one buffer for every
/// connection. The body ends with `herald_admin_metrics_renders_total`, the
/// renders since start.
final class AdminMetricsCache: Sendable {
    let interval: Duration
    private let render: @Sendable () -> [UInt8]
    private let cached = Mutex<(at: ContinuousClock.Instant, body: ByteBuffer)?>(nil)
    private let renders = Atomic<Int>(0)

    init(interval: Duration, render: @escaping @Sendable () -> [UInt8]) {
        self.interval = interval
        self.render = render
    }

    /// How many times the body was rendered.
    var renderCount: Int { renders.load(ordering: .relaxed) }

    func body(now: ContinuousClock.Instant = .now) -> ByteBuffer {
        cached.withLock { cached in
            if let cached, now - cached.at < interval { return cached.body }
            let count = renders.wrappingAdd(1, ordering: .relaxed).newValue
            var body = ByteBuffer(bytes: render())
            body.writeString("""
                # HELP herald_admin_metrics_renders_total Renders of /metrics (at most one a second, shared by scrapers).
                # TYPE herald_admin_metrics_renders_total counter
                herald_admin_metrics_renders_total \(count)

                """)
            cached = (now, body)
            return body
        }
    }
}
