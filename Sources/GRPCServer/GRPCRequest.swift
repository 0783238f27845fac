import Logging
import NIOCore

/// One unary call as the handler sees it.
public struct GRPCRequest: Sendable {
    /// The method path, e.g. `/pkg.Service/Method`.
    public var path: String
    /// Custom request headers (see `GRPCMetadata`).
    public var metadata: GRPCMetadata
    /// The single request message, unframed.
    public var message: [UInt8]
    /// When the call must end, from `grpc-timeout`; `nil` without one.
    public var deadline: ContinuousClock.Instant?
    /// The peer, e.g. `127.0.0.1:53422`.
    public var remoteAddress: String?

    public init(path: String, metadata: GRPCMetadata = GRPCMetadata(), message: [UInt8],
                deadline: ContinuousClock.Instant? = nil, remoteAddress: String? = nil) {
        self.path = path
        self.metadata = metadata
        self.message = message
        self.deadline = deadline
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
}

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
    /// Event loops (one per core by default).
    public var eventLoopThreads: Int = System.coreCount

    public init() {}
}

/// A snapshot of server counters.
public struct GRPCServerStats: Sendable, Hashable {
    public var connectionsOpen: Int
    public var rpcsInFlight: Int
    public var rpcsTotal: Int

    public init(connectionsOpen: Int, rpcsInFlight: Int, rpcsTotal: Int) {
        self.connectionsOpen = connectionsOpen
        self.rpcsInFlight = rpcsInFlight
        self.rpcsTotal = rpcsTotal
    }
}
