import Logging
public import NIOCore

/// One unary call as the handler sees it.
public struct GRPCRequest: Sendable {
    /// The method path, e.g. `/pkg.Service/Method`.
    public var path: String
    /// Custom request headers (see `GRPCMetadata`).
    public var metadata: GRPCMetadata
    /// The single request message, unframed.
    public var message: [UInt8]
    /// When the call must end, from `grpc-timeout`; `nil` without one.
    public var deadline: ContinuousClock.Instant? {
        get { deadlineBox?.instant }
        set { deadlineBox = newValue.map(GRPCCallDeadline.init) }
    }
    /// Boxed: `ContinuousClock.Instant` is resilient, and a stored one made
    /// every request's copy and destroy go through value witnesses.
    var deadlineBox: GRPCCallDeadline?
    /// The peer, e.g. `127.0.0.1:53422`.
    public var remoteAddress: String?

    public init(path: String, metadata: GRPCMetadata = GRPCMetadata(), message: [UInt8],
                deadline: ContinuousClock.Instant? = nil, remoteAddress: String? = nil) {
        self.path = path
        self.metadata = metadata
        self.message = message
        self.deadlineBox = deadline.map(GRPCCallDeadline.init)
        self.remoteAddress = remoteAddress
    }

    init(path: String, metadata: GRPCMetadata, message: [UInt8], deadlineBox: GRPCCallDeadline?, remoteAddress: String?) {
        self.path = path
        self.metadata = metadata
        self.message = message
        self.deadlineBox = deadlineBox
        self.remoteAddress = remoteAddress
    }
}

/// How a registered unary method runs.
public enum GRPCUnaryHandler: Sendable {
    /// Runs on the event-loop thread that read the request; must not block.
    /// Throw `GRPCStatus` for an error status.
    case sync(@Sendable (GRPCRequest) throws -> [UInt8])
    /// Runs off the loop (a Task); the response is submitted on the connection's loop
    /// when it returns. The Task is cancelled on RST_STREAM, deadline expiry or
    /// connection loss.
    case async(@Sendable (GRPCRequest) async throws -> [UInt8])
    /// CPU-only work whose cost grows with the request: requests of up to
    /// `inlineBytes` run on the event loop (the fast path), larger ones on the
    /// server's compute threads (`GRPCServerConfiguration.computeThreads`, at a
    /// lower OS priority), so a large request never delays Health or small calls
    /// on the same loop.
    case compute(inlineBytes: Int, @Sendable (GRPCRequest) throws -> [UInt8])
    /// Starts the call where `.compute` would run it (on the loop up to
    /// `inlineBytes` of request, else on the compute threads) and answers
    /// later through its `GRPCReply`, from any thread: no Task. For a call
    /// whose wait is a callback (a store write committing on its own
    /// thread). Throwing before handing the reply on answers with that error.
    case deferred(inlineBytes: Int, @Sendable (GRPCRequest, GRPCReply) throws -> Void)
}

/// A registered method: how it runs and who may call it. A class: each call
/// holds its route, and copying one reference costs one retain where a struct
/// of closures cost one per closure (and outlined value-witness copies).
final class GRPCRoute: Sendable {
    /// A unary method's handler (nil for a streaming method).
    let handler: GRPCUnaryHandler?
    /// A streaming method's handler.
    let streaming: GRPCStreamingHandler?
    let admission: GRPCAdmission?
    /// Registration order: the method's index in `GRPCServer.methods`.
    let index: Int
    /// Registered with `GRPCRouteLimits.unauthenticated`.
    let unauthenticated: Bool

    init(
        handler: GRPCUnaryHandler?, streaming: GRPCStreamingHandler? = nil, admission: GRPCAdmission?, index: Int = -1,
        limits: GRPCRouteLimits = .standard
    ) {
        self.handler = handler
        self.streaming = streaming
        self.admission = admission
        self.index = index
        self.unauthenticated = limits == .unauthenticated
    }
}

/// Which limits a route's calls run under.
public enum GRPCRouteLimits: Sendable, Hashable {
    /// The server's: `maxReceiveMessageBytes`, `maxBufferedBytes`.
    case standard
    /// For a method anyone may call without a token (health, reflection,
    /// status): its request messages are bounded by
    /// `unauthenticatedMaxReceiveMessageBytes` and buffered in their own
    /// `unauthenticatedMaxBufferedBytes` budget, so such callers can never
    /// take the budget the admitted methods need; its streaming calls are
    /// bounded in number (`unauthenticatedMaxStreamsPerConnection`,
    /// `unauthenticatedMaxStreams`) and age (`unauthenticatedMaxStreamAge`),
    /// and do not keep their connection out of the idle timeout.
    case unauthenticated
}

/// Decides from a call's request headers, before its body is read, whether it
/// may run: nil admits it, a status ends it at once (Trailers-Only). Runs on
/// the event loop: must be cheap and must not block.
public typealias GRPCAdmission = @Sendable (GRPCMetadata) -> GRPCStatus?

/// Server settings.
public struct GRPCServerConfiguration: Sendable {
    public var host: String = "127.0.0.1"
    public var port: Int = 50051
    /// Largest request message accepted (declared length); larger → RESOURCE_EXHAUSTED.
    public var maxReceiveMessageBytes: Int = 4 * 1024 * 1024
    /// Bound on a request's header list (HPACK-decoded name + value + 32 per field,
    /// as SETTINGS_MAX_HEADER_LIST_SIZE counts); larger → RESOURCE_EXHAUSTED.
    public var maxHeaderListBytes: Int = 16 * 1024
    /// Advertised in SETTINGS_MAX_CONCURRENT_STREAMS and enforced (REFUSED_STREAM beyond it).
    public var maxConcurrentStreams: Int = 100
    /// Event loops: by default one per CPU the process may use (``CPUBudget``:
    /// affinity and cgroup quota, not the machine's core count).
    public var eventLoopThreads: Int = CPUBudget.atStart.usable

    // MARK: Resource bounds (what a hostile or broken peer can hold)

    /// Most connections open at once; further ones are closed as soon as they
    /// are accepted. Lowered at start to fit the process's file-descriptor limit.
    public var maxConnections: Int = 4096
    /// Most connections open at once from one peer address (an IPv6 peer:
    /// its /64); further ones are closed as soon as they are accepted.
    /// Loopback counts like any other address. 0: no per-peer cap.
    public var maxConnectionsPerPeer: Int = 256
    /// Request bytes one connection may hold buffered across its unfinished
    /// calls; past it the call that would grow it gets RESOURCE_EXHAUSTED.
    public var maxBufferedBytesPerConnection: Int = 16 * 1024 * 1024
    /// Request bytes all connections together may hold buffered; past it the
    /// call that would grow it gets RESOURCE_EXHAUSTED.
    public var maxBufferedBytes: Int = 128 * 1024 * 1024

    // Calls of routes registered with `GRPCRouteLimits.unauthenticated`.

    /// Largest request message of such a call; larger → RESOURCE_EXHAUSTED.
    public var unauthenticatedMaxReceiveMessageBytes: Int = 64 * 1024
    /// Request bytes all such calls together may hold buffered (their own
    /// budget, apart from `maxBufferedBytes`); past it: RESOURCE_EXHAUSTED.
    public var unauthenticatedMaxBufferedBytes: Int = 4 * 1024 * 1024
    /// Streaming calls of such routes open at once on one connection; more
    /// are refused with RESOURCE_EXHAUSTED.
    public var unauthenticatedMaxStreamsPerConnection: Int = 16
    /// The same bound for the whole server.
    public var unauthenticatedMaxStreams: Int = 1024
    /// A streaming call of such a route is ended with UNAVAILABLE at this
    /// age (the client calls again).
    public var unauthenticatedMaxStreamAge: Duration = .seconds(1800)
    /// Time a new connection has to send the HTTP/2 preface and its SETTINGS.
    public var handshakeTimeout: Duration = .seconds(10)
    /// A connection with no open call for this long gets GOAWAY and is closed.
    public var idleTimeout: Duration = .seconds(300)
    /// A connection from which nothing arrived for this long is sent a PING …
    public var keepaliveInterval: Duration = .seconds(60)
    /// … and closed when nothing (not even the PING's ack) arrives within this.
    public var keepaliveTimeout: Duration = .seconds(20)
    /// Time a call's request (headers through END_STREAM) may take to arrive;
    /// past it the call ends with DEADLINE_EXCEEDED and its buffer is freed.
    public var requestReceiveTimeout: Duration = .seconds(30)
    /// Threads that run large `.compute` calls (at a lower priority than the loops).
    public var computeThreads: Int = max(1, CPUBudget.atStart.usable - 1)
    /// Large `.compute` calls waiting for a compute thread; past it: RESOURCE_EXHAUSTED.
    public var maxQueuedComputeCalls: Int = 64
    /// Longest `grpc-message` sent (UTF-8 bytes before percent-encoding); longer
    /// messages are cut at a character boundary and end with "…".
    public var maxStatusMessageBytes: Int = 1024
    /// On drain, time streaming handlers have to end by themselves (a health
    /// watch says NOT_SERVING and returns) before they are cancelled and end
    /// with UNAVAILABLE. The drain's own timeout still bounds everything.
    public var streamingDrainGrace: Duration = .seconds(1)
    /// Adds handlers in front of each accepted connection's HTTP/2 handler
    /// (TLS), on the connection's event loop through `syncOperations`; a throw
    /// closes the connection. Nil: cleartext (h2c). The handshake timeout
    /// runs from accept, so it bounds what these handlers do first too.
    public var connectionPrologue: (@Sendable (any Channel) throws -> Void)?
    /// Installs the handlers of a connection whose first bytes are not the
    /// HTTP/2 connection preface (an HTTP/1.1 request), at the end of its
    /// pipeline on its event loop; a throw closes the connection. Nil: every
    /// connection goes to the HTTP/2 engine as it is accepted. Set, each
    /// connection's first bytes are compared with the preface once (within
    /// `handshakeTimeout`), then nothing of the check stays in its pipeline.
    /// Such connections count against `maxConnections` as gRPC ones do.
    public var http1Pipeline: (@Sendable (any Channel) throws -> Void)?
    /// POST requests on HTTP/2 whose content type is not gRPC's, taken by
    /// another protocol (Connect); nil: they get HTTP 415.
    public var plainCalls: GRPCPlainCalls?

    public init() {}
}

/// A snapshot of server counters.
public struct GRPCServerStats: Sendable, Hashable {
    public var connectionsOpen: Int
    public var rpcsInFlight: Int
    public var rpcsTotal: Int
    /// Request bytes held for calls still arriving, all connections together.
    public var bufferedRequestBytes: Int
    /// The part of the request bytes held by unauthenticated routes' calls
    /// (their own budget, not in `bufferedRequestBytes`).
    public var unauthenticatedBufferedBytes: Int
    /// Streaming calls of unauthenticated routes open.
    public var unauthenticatedStreams: Int

    public init(
        connectionsOpen: Int, rpcsInFlight: Int, rpcsTotal: Int, bufferedRequestBytes: Int = 0,
        unauthenticatedBufferedBytes: Int = 0, unauthenticatedStreams: Int = 0
    ) {
        self.connectionsOpen = connectionsOpen
        self.rpcsInFlight = rpcsInFlight
        self.rpcsTotal = rpcsTotal
        self.bufferedRequestBytes = bufferedRequestBytes
        self.unauthenticatedBufferedBytes = unauthenticatedBufferedBytes
        self.unauthenticatedStreams = unauthenticatedStreams
    }
}
