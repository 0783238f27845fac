import GRPCEngine

/// The HTTP/1.1 side's limits: the gRPC listener's own (SPEC §8 "the same
/// limits as gRPC").
struct WebLimits: Sendable {
    /// Bytes of a request's line and headers (`maxHeaderListBytes`); past it: 400, closed.
    var maxHeaderBytes: Int
    /// Bytes of a body (`maxReceiveMessageBytes`); past it, or declared past
    /// it: 413 before the body is read, closed.
    var maxBodyBytes: Int
    /// Time a request has, from its first byte to its last
    /// (`requestReceiveTimeout`); past it: 408 once its head was parsed, and closed.
    var requestTimeout: Duration
    /// Time a connection may wait for its next request (`idleTimeout`); past it: closed.
    var idleTimeout: Duration

    init(_ grpc: GRPCServerConfiguration) {
        maxHeaderBytes = grpc.maxHeaderListBytes
        maxBodyBytes = grpc.maxReceiveMessageBytes
        requestTimeout = grpc.requestReceiveTimeout
        idleTimeout = grpc.idleTimeout
    }

    /// What one read may hold beyond the header bound (the next request's
    /// start, a body's start): NIO reads at most 64 KiB at once.
    static let readSlack = 64 * 1024
}
