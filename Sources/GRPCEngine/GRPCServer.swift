public import Logging
import NIOCore
import NIOPosix
import Synchronization

/// A generic unary gRPC server: h2c (prior knowledge) on SwiftNIO event loops, every
/// HTTP/2 frame parsed by libnghttp2 (one server session per connection, memory mode).
///
/// Answers, per gRPC PROTOCOL-HTTP2 and statuscodes.md:
/// - method other than POST → HTTP 405; content-type not `application/grpc[+…|;…]` → HTTP 415,
///   each once the request has ended (END_STREAM), so nghttp2 still checks the rest of it;
/// - unknown path → UNIMPLEMENTED; malformed `grpc-timeout` → INVALID_ARGUMENT;
///   header list over `maxHeaderListBytes` → RESOURCE_EXHAUSTED (all Trailers-Only);
/// - declared message length over `maxReceiveMessageBytes` → RESOURCE_EXHAUSTED as soon as
///   the 5-byte prefix arrives; a compressed message is inflated under
///   `grpc-encoding: gzip` (bounded by the same limit: RESOURCE_EXHAUSTED past it,
///   INTERNAL for bad gzip) and is UNIMPLEMENTED under any other or no encoding
///   (`grpc-accept-encoding: identity,gzip` is advertised); flags other than 0/1 or a stream
///   ending inside a message → INTERNAL;
/// - zero or several request messages on a unary method → UNIMPLEMENTED (cardinality violation);
/// - deadline passed → DEADLINE_EXCEEDED, the async handler's Task is cancelled;
/// - handler throws `GRPCStatus` → that status; any other error → INTERNAL "internal error"
///   (the detail is logged); a handler's `CancellationError` → CANCELLED.
/// Async handlers' responses are submitted when they return (not HEADERS first and DATA
/// deferred), so an async error is still a Trailers-Only response.
public final class GRPCServer: Sendable {
    public let configuration: GRPCServerConfiguration
    let logger: Logger
    private let state: Mutex<State>

    private struct State {
        var routes: [String: GRPCRoute] = [:]
        var methods: [String] = []
        var observer: (any GRPCCallObserver)?
        var group: MultiThreadedEventLoopGroup?
        var serverChannel: (any Channel)?
        var shared: GRPCServerShared?
        var draining = false
        var stopped = false
    }

    public init(configuration: GRPCServerConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.state = Mutex(State())
    }

    /// Registers the handler of a method path such as `/pkg.Service/Method`; call before `start()`.
    ///
    /// - Parameter admission: checked on the request headers, before any of the
    ///   body is buffered (e.g. authentication): a status it returns ends the call.
    /// - Parameter limits: `.unauthenticated` for a method anyone may call
    ///   (see `GRPCRouteLimits`).
    public func register(
        _ path: String, _ handler: GRPCUnaryHandler, admission: GRPCAdmission? = nil, limits: GRPCRouteLimits = .standard
    ) {
        state.withLock { state in
            precondition(state.shared == nil, "register(_:_:) must be called before start()")
            state.routes[path] = GRPCRoute(
                handler: handler, admission: admission, index: state.methods.count, limits: limits)
            state.methods.append(path)
        }
    }

    /// Registers a streaming method at `path` (e.g. `/pkg.Service/Watch`).
    public func register(
        _ path: String, streaming handler: GRPCStreamingHandler, admission: GRPCAdmission? = nil,
        limits: GRPCRouteLimits = .standard
    ) {
        state.withLock { state in
            precondition(state.shared == nil, "register(_:streaming:) must be called before start()")
            state.routes[path] = GRPCRoute(
                handler: nil, streaming: handler, admission: admission, index: state.methods.count, limits: limits)
            state.methods.append(path)
        }
    }

    /// A registered method, for callers that run it in process (the Connect
    /// protocol on the same port): its unary handler (nil for a streaming
    /// method), its admission, and whether it is callable without a token
    /// (`GRPCRouteLimits.unauthenticated`). Nil for a path nothing is registered at.
    public func registeredRoute(
        _ path: String
    ) -> (unary: GRPCUnaryHandler?, admission: GRPCAdmission?, unauthenticated: Bool)? {
        state.withLock { state in state.routes[path].map { ($0.handler, $0.admission, $0.unauthenticated) } }
    }

    /// Faults tests inject (honoured by debug builds only).
    let testFaults = GRPCTestFaults()

    /// The registered method paths, in registration order (the index a
    /// `GRPCFinishedCall` names).
    public var methods: [String] { state.withLock { $0.methods } }

    /// Sets the one observer told about every finished call; call before `start()`.
    public func observe(_ observer: any GRPCCallObserver) {
        state.withLock { state in
            precondition(state.shared == nil, "observe(_:) must be called before start()")
            state.observer = observer
        }
    }

    /// True once `shutdownGracefully` has begun.
    public var isDraining: Bool { state.withLock { $0.draining } }

    /// Binds and starts serving; returns the bound address (port 0 picks a free port).
    public func start() async throws -> (host: String, port: Int) {
        let (shared, group) = state.withLock { state -> (GRPCServerShared, MultiThreadedEventLoopGroup) in
            precondition(state.shared == nil, "start() called twice")
            var configuration = configuration
            configuration.maxConnections = ProcessLimits.connectionCap(configuration.maxConnections, logger: logger)
            let shared = GRPCServerShared(
                configuration: configuration, routes: state.routes, observer: state.observer, logger: logger,
                testFaults: testFaults)
            let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, configuration.eventLoopThreads))
            shared.computePool.start()
            state.shared = shared
            state.group = group
            return (shared, group)
        }
        let bootstrap = ServerBootstrap(group: group)
            // At the descriptor limit accept(2) fails at once and would be
            // retried in a busy loop; this pauses accepting for a second instead.
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(AcceptBackoffHandler(shouldForwardIOErrorCaught: false))
                }
            }
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 256 * 1024, high: 1024 * 1024))
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let peer = GRPCPeerKey(channel.remoteAddress)
                    guard shared.reserveConnection(peer: peer) else {
                        channel.close(promise: nil)
                        return
                    }
                    channel.closeFuture.whenComplete { _ in shared.releaseConnection(peer: peer) }
                    try shared.configuration.connectionPrologue?(channel)
                    if let http1 = shared.configuration.http1Pipeline {
                        try channel.pipeline.syncOperations.addHandler(GRPCProtocolSniffer(shared: shared, http1: http1))
                    } else {
                        try channel.pipeline.syncOperations.addHandler(GRPCConnection(shared: shared, channel: channel))
                    }
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.bind(host: configuration.host, port: configuration.port).get()
        } catch {
            try? await group.shutdownGracefully()
            state.withLock { $0.group = nil; $0.shared = nil }
            throw ListenError(host: configuration.host, port: configuration.port, error: error)
        }
        state.withLock { $0.serverChannel = channel }
        let port = channel.localAddress?.port ?? configuration.port
        let host = channel.localAddress?.ipAddress ?? configuration.host
        logger.info("grpc server listening", metadata: ["address": "\(host):\(port)"])
        return (host, port)
    }

    /// Reports a call of a registered method that was answered in process
    /// (another protocol on the port calling its handler) to the observer:
    /// the tally and `callFinished` see it as they see a gRPC call. Any thread.
    public func recordInProcessCall(_ request: GRPCRequest, code: GRPCStatus.Code, durationNanoseconds: Int64) {
        guard let shared = state.withLock({ $0.shared }) else { return }
        let method = shared.routes[request.path]?.index ?? -1
        shared.tally?.record(method: method, code: code.rawValue, nanoseconds: durationNanoseconds)
        guard let callFinished = shared.callFinished else { return }
        callFinished(GRPCFinishedCall(
            method: method, path: request.path, code: code, durationNanoseconds: durationNanoseconds,
            peer: request.remoteAddress, annotation: shared.annotate?(request)))
    }

    /// A snapshot of the counters.
    public func stats() -> GRPCServerStats {
        let shared = state.withLock { $0.shared }
        return shared?.stats() ?? GRPCServerStats(connectionsOpen: 0, rpcsInFlight: 0, rpcsTotal: 0)
    }

    /// GOAWAY to every connection, stop accepting, let in-flight RPCs finish (bounded by
    /// `timeout`), close what is left, stop the event loops.
    public func shutdownGracefully(timeout: Duration) async {
        let (serverChannel, shared, group) = state.withLock { state in
            state.draining = true
            let result = (state.serverChannel, state.shared, state.group)
            state.serverChannel = nil
            state.group = nil
            return result
        }
        guard let group else { return }
        logger.info("grpc server draining", metadata: ["timeout": "\(timeout)"])
        try? await serverChannel?.close()
        let connections = shared?.beginDraining() ?? []
        for connection in connections {
            connection.eventLoop.execute { connection.beginShutdown() }
        }
        // HTTP/1.1 connections: told to close once their request in flight is answered.
        let others = shared?.drainOtherChannels() ?? []
        for channel in others { channel.pipeline.fireUserInboundEventTriggered(GRPCServerDraining()) }
        let closeFutures = connections.map { $0.channel.closeFuture } + others.map(\.closeFuture)
        let drained = await withTaskGroup(of: Bool.self) { tasks in
            tasks.addTask {
                for future in closeFutures { try? await future.get() }
                return true
            }
            tasks.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await tasks.next() ?? false
            if !first {
                for connection in connections { connection.forceClose() }
                for channel in others { channel.close(promise: nil) }
            }
            tasks.cancelAll()
            return first
        }
        if !drained { logger.warning("grpc shutdown timeout: closed connections with calls in flight") }
        try? await shared?.computePool.shutdownGracefully()
        try? await group.shutdownGracefully()
        logger.info("grpc server stopped")
    }
}

/// One connection's counters: written only by its event loop (no cache-line
/// ping-pong between loops), summed by `stats()`. One writer, so an update
/// is a relaxed load and store: no locked read-modify-write (3 per call).
final class GRPCConnectionCounters: Sendable {
    let rpcsInFlight = Atomic<Int>(0)
    let rpcsTotal = Atomic<Int>(0)

    @inline(__always) func rpcStarted() {
        rpcsTotal.store(rpcsTotal.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
        rpcsInFlight.store(rpcsInFlight.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
    }

    @inline(__always) func rpcFinished() {
        rpcsInFlight.store(rpcsInFlight.load(ordering: .relaxed) &- 1, ordering: .relaxed)
    }
}

/// What every connection of a started server shares: immutable routes and settings,
/// and the registry of open connections (for stats and graceful shutdown).
final class GRPCServerShared: Sendable {
    let configuration: GRPCServerConfiguration
    let routes: [String: GRPCRoute]
    /// The observer's two hooks as closures: calling a method on a stored
    /// existential copied it (value witnesses and retains) on every call.
    /// Nil unless the observer `observesEachCall` (asked once, not per call).
    let callFinished: (@Sendable (GRPCFinishedCall) -> Void)?
    /// The observer's tally: each connection records into its loop's table.
    let tally: GRPCCallTally?
    /// Nil unless the observer `annotatesRequests` (asked once, not per call).
    let annotate: (@Sendable (GRPCRequest) -> String?)?
    let logger: Logger
    /// Runs large `.compute` calls off the event loops.
    let computePool: NIOThreadPool
    /// Large `.compute` calls queued or running on `computePool`.
    let computeCalls = Atomic<Int>(0)
    /// Request bytes buffered by all connections (bounded by `maxBufferedBytes`).
    let bufferedBytes: SharedBudget
    /// Request bytes buffered by unauthenticated routes' calls (bounded by
    /// `unauthenticatedMaxBufferedBytes`; not in `bufferedBytes`).
    let unauthenticatedBufferedBytes: SharedBudget
    /// Unauthenticated routes' streaming calls open (bounded by `unauthenticatedMaxStreams`).
    let unauthenticatedStreams: SharedBudget
    let testFaults: GRPCTestFaults
    /// Connections accepted and not yet closed (bounded by `maxConnections`).
    private let openConnections = Atomic<Int>(0)
    /// Open connections per peer address (bounded by `maxConnectionsPerPeer`).
    private let peers = Mutex<[GRPCPeerKey: Int]>([:])
    /// Connections refused at the caps since the last warning (logged at most every 10 s).
    private let refusedConnections = Atomic<Int>(0)
    private let lastRefusalLog = Atomic<Int64>(0)
    private let registry = Mutex<Registry>(Registry())

    private struct Registry {
        var connections: [ObjectIdentifier: GRPCConnection] = [:]
        /// Connections handed to `http1Pipeline`, by their channel.
        var otherChannels: [ObjectIdentifier: any Channel] = [:]
        var draining = false
        /// RPCs of connections already closed.
        var closedRPCs = 0
    }

    init(
        configuration: GRPCServerConfiguration, routes: [String: GRPCRoute], observer: (any GRPCCallObserver)? = nil,
        logger: Logger, testFaults: GRPCTestFaults = GRPCTestFaults()
    ) {
        self.configuration = configuration
        self.testFaults = testFaults
        // Each loop takes its request bytes from its own share: no cache line
        // written by every loop per request (issue 30).
        bufferedBytes = SharedBudget(limit: configuration.maxBufferedBytes, loops: configuration.eventLoopThreads)
        unauthenticatedBufferedBytes = SharedBudget(
            limit: configuration.unauthenticatedMaxBufferedBytes, loops: configuration.eventLoopThreads)
        unauthenticatedStreams = SharedBudget(limit: configuration.unauthenticatedMaxStreams)
        self.routes = routes
        tally = observer?.tally
        if let observer {
            if observer.observesEachCall {
                callFinished = { call in observer.callFinished(call) }
            } else {
                callFinished = nil
            }
            if observer.annotatesRequests {
                annotate = { request in observer.annotate(request) }
            } else {
                annotate = nil
            }
        } else {
            callFinished = nil
            annotate = nil
        }
        self.logger = logger
        self.computePool = NIOThreadPool(numberOfThreads: max(1, configuration.computeThreads))
    }

    /// Takes a connection slot, and one of `peer`'s; false at `maxConnections`
    /// or at `maxConnectionsPerPeer` (the caller closes the channel).
    func reserveConnection(peer: GRPCPeerKey?) -> Bool {
        let open = openConnections.wrappingAdd(1, ordering: .relaxed).newValue
        guard open <= configuration.maxConnections else {
            openConnections.subtract(1, ordering: .relaxed)
            logRefusal("connection limit reached: refusing new connections", limit: configuration.maxConnections)
            return false
        }
        let perPeer = configuration.maxConnectionsPerPeer
        guard perPeer > 0, let peer else { return true }
        let admitted = peers.withLock { peers in
            let count = peers[peer, default: 0]
            guard count < perPeer else { return false }
            peers[peer] = count + 1
            return true
        }
        if !admitted {
            openConnections.subtract(1, ordering: .relaxed)
            logRefusal("per-peer connection limit reached: refusing the peer's new connections",
                       limit: perPeer, peer: peer.description)
        }
        return admitted
    }

    func releaseConnection(peer: GRPCPeerKey?) {
        openConnections.subtract(1, ordering: .relaxed)
        guard configuration.maxConnectionsPerPeer > 0, let peer else { return }
        peers.withLock { peers in
            let count = peers[peer, default: 0]
            if count <= 1 { peers[peer] = nil } else { peers[peer] = count - 1 }
        }
    }

    /// Logs refused connections at most every 10 s (a flood must not flood the log).
    private func logRefusal(_ message: Logger.Message, limit: Int, peer: String? = nil) {
        let refused = refusedConnections.wrappingAdd(1, ordering: .relaxed).newValue
        let now = Int64(NIODeadline.now().uptimeNanoseconds / 1_000_000_000)
        let last = lastRefusalLog.load(ordering: .relaxed)
        if now - last >= 10, lastRefusalLog.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged {
            refusedConnections.subtract(refused, ordering: .relaxed)
            var metadata: Logger.Metadata = ["limit": "\(limit)", "refused": "\(refused)"]
            if let peer { metadata["peer"] = "\(peer)" }
            logger.warning(message, metadata: metadata)
        }
    }

    /// The server-wide request buffer a call draws from: unauthenticated
    /// routes' calls have their own.
    @inline(__always)
    func connectionOpened(_ connection: GRPCConnection) {
        let draining = registry.withLock { registry in
            registry.connections[ObjectIdentifier(connection)] = connection
            return registry.draining
        }
        if draining { connection.beginShutdown() }
    }

    func connectionClosed(_ connection: GRPCConnection) {
        registry.withLock { registry in
            if registry.connections.removeValue(forKey: ObjectIdentifier(connection)) != nil {
                registry.closedRPCs += connection.counters.rpcsTotal.load(ordering: .relaxed)
            }
        }
    }

    /// Registers a connection handed to `http1Pipeline` until it closes;
    /// false while draining (the caller closes it).
    func otherChannelOpened(_ channel: any Channel) -> Bool {
        let key = ObjectIdentifier(channel)
        let admitted = registry.withLock { registry in
            guard !registry.draining else { return false }
            registry.otherChannels[key] = channel
            return true
        }
        if admitted {
            channel.closeFuture.whenComplete { _ in self.registry.withLock { _ = $0.otherChannels.removeValue(forKey: key) } }
        }
        return admitted
    }

    /// The connections handed to `http1Pipeline` still open (draining has begun).
    func drainOtherChannels() -> [any Channel] {
        registry.withLock { Array($0.otherChannels.values) }
    }

    func stats() -> GRPCServerStats {
        registry.withLock { registry in
            var stats = GRPCServerStats(
                connectionsOpen: registry.connections.count, rpcsInFlight: 0, rpcsTotal: registry.closedRPCs,
                bufferedRequestBytes: bufferedBytes.used,
                unauthenticatedBufferedBytes: unauthenticatedBufferedBytes.used,
                unauthenticatedStreams: unauthenticatedStreams.used)
            for connection in registry.connections.values {
                stats.rpcsInFlight += connection.counters.rpcsInFlight.load(ordering: .relaxed)
                stats.rpcsTotal += connection.counters.rpcsTotal.load(ordering: .relaxed)
            }
            return stats
        }
    }

    func beginDraining() -> [GRPCConnection] {
        registry.withLock { registry in
            registry.draining = true
            return Array(registry.connections.values)
        }
    }
}

/// A server-wide amount (buffered bytes, open streams) bounded by a limit,
/// shared by every event loop.
final class SharedBudget: Sendable {
    let limit: Int
    private let total = Atomic<Int>(0)
    /// Bytes a loop's share takes from `total` at once (0: none kept; see ``LoopBudget``).
    let chunk: Int
    private let shares = Mutex<[ObjectIdentifier: LoopBudget]>([:])

    /// - Parameter loops: the event loops that will take shares (sizes the
    ///   chunk: all of them together keep at most 1/16 of `limit` idle).
    init(limit: Int, loops: Int = 1) {
        self.limit = limit
        let chunk = min(64 << 10, limit / (64 * max(1, loops)))
        self.chunk = chunk >= 1024 ? chunk : 0
    }

    /// What is taken now and not held idle by a loop's share.
    var used: Int {
        let idle = shares.withLock { $0.values.reduce(0) { $0 + $1.idle } }
        return total.load(ordering: .relaxed) - idle
    }

    /// `loop`'s share (made on first use); use it only on `loop`.
    func share(for loop: any EventLoop) -> LoopBudget {
        shares.withLock { shares in
            if let share = shares[ObjectIdentifier(loop)] { return share }
            let share = LoopBudget(shared: self, chunk: chunk)
            shares[ObjectIdentifier(loop)] = share
            return share
        }
    }

    /// Takes `amount` if the total stays within `limit` (a release, 0 or
    /// less, always goes through); false, and nothing taken, otherwise.
    @inline(__always)
    func reserve(_ amount: Int) -> Bool {
        if total.wrappingAdd(amount, ordering: .relaxed).newValue <= limit || amount <= 0 { return true }
        total.subtract(amount, ordering: .relaxed)
        return false
    }

    @inline(__always)
    func release(_ amount: Int) {
        total.subtract(amount, ordering: .relaxed)
    }
}

/// The address a per-peer connection cap counts by: an IPv4 address, or an
/// IPv6 address's /64 (one host usually holds a whole /64); an IPv4-mapped
/// IPv6 address counts as its IPv4 address. Nil for other sockets.
struct GRPCPeerKey: Hashable, Sendable, CustomStringConvertible {
    /// IPv4: 0 and the address; IPv6: the /64 prefix and a marker.
    private let high: UInt64
    private let low: UInt64

    init?(_ address: SocketAddress?) {
        switch address {
        case .v4(let v4):
            high = 0
            low = UInt64(UInt32(bigEndian: v4.address.sin_addr.s_addr))
        case .v6(let v6):
            var bytes = [UInt8](repeating: 0, count: 16)
            withUnsafeBytes(of: v6.address.sin6_addr) { raw in
                for index in 0..<min(16, raw.count) { bytes[index] = raw[index] }
            }
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
                high = 0
                low = bytes[12..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            } else {
                high = bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                low = 1 << 63
            }
        default:
            return nil
        }
    }

    var description: String {
        if high == 0, low < 1 << 32 {
            return "\(low >> 24).\(low >> 16 & 0xFF).\(low >> 8 & 0xFF).\(low & 0xFF)"
        }
        let groups = (0..<4).map { String(high >> (48 - 16 * UInt64($0)) & 0xFFFF, radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }
}

/// Faults a test injects into a server to reach error paths no real peer
/// can (nghttp2 refusing a response). Honoured by debug builds only: the
/// release build never reads them.
final class GRPCTestFaults: Sendable {
    /// Response and RST_STREAM submissions fail (as if nghttp2 had no memory).
    let failSubmissions = Atomic<Bool>(false)
    /// Times a connection was torn down while nghttp2 was still inside one
    /// of its receive or send calls (must stay 0).
    let teardownsInsideSession = Atomic<Int>(0)
}
