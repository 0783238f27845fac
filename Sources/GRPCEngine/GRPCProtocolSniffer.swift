import NIOCore

/// The first handler of a connection on a server with
/// `GRPCServerConfiguration.http1Pipeline` set: it compares the first bytes
/// with the HTTP/2 connection preface and the HTTP/1.1 request methods once,
/// installs either the HTTP/2 engine (`GRPCConnection`) or the HTTP/1.1
/// handlers behind itself, hands them what it read, and leaves the pipeline.
/// Nothing of it stays on the gRPC path. Anything that is neither (a broken
/// preface, garbage) goes to the engine, which answers it as it always has
/// (GOAWAY, closed). A connection that sends too little to decide within the
/// handshake timeout is closed.
final class GRPCProtocolSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// RFC 9113 §3.4.
    static let preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// How an HTTP/1.1 request line starts (RFC 9110 §9 methods, then a space).
    static let requestLineStarts: [[UInt8]] = ["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "TRACE", "CONNECT"]
        .map { Array("\($0) ".utf8) }

    /// What the first bytes say.
    enum Verdict: Equatable {
        /// A prefix of the preface or of a request line: more bytes are needed.
        case undecided
        /// The preface, or neither (the engine refuses it as before).
        case http2
        case http1
    }

    /// One prefix comparison of what has arrived so far (at most 24 bytes read).
    static func verdict(_ bytes: ByteBuffer) -> Verdict {
        let view = bytes.readableBytesView
        var undecided = false
        for (candidate, verdict) in [(preface, Verdict.http2)] + requestLineStarts.map({ ($0, Verdict.http1) }) {
            let count = min(view.count, candidate.count)
            guard view.prefix(count).elementsEqual(candidate.prefix(count)) else { continue }
            if count == candidate.count { return verdict }
            undecided = true
        }
        return undecided ? .undecided : .http2
    }

    private let shared: GRPCServerShared
    private let http1: @Sendable (any Channel) throws -> Void
    private var buffered: ByteBuffer?
    private var timeout: Scheduled<Void>?

    init(shared: GRPCServerShared, http1: @escaping @Sendable (any Channel) throws -> Void) {
        self.shared = shared
        self.http1 = http1
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        timeout = context.eventLoop.scheduleTask(in: TimeAmount(shared.configuration.handshakeTimeout)) {
            channel.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timeout?.cancel()
        timeout = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if var held = buffered {
            held.writeBuffer(&bytes)
            bytes = held
        }
        let verdict = Self.verdict(bytes)
        guard verdict != .undecided else {
            buffered = bytes
            return
        }
        buffered = nil
        timeout?.cancel()
        timeout = nil
        do {
            if verdict == .http2 {
                try context.pipeline.syncOperations.addHandler(
                    GRPCConnection(shared: shared, channel: context.channel), position: .after(self))
            } else {
                guard shared.otherChannelOpened(context.channel) else {
                    context.close(promise: nil)
                    return
                }
                try http1(context.channel)
            }
        } catch {
            shared.logger.debug("connection setup failed", metadata: ["error": "\(error)"])
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(wrapInboundOut(bytes))
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}

/// Fired inbound on each connection handed to `http1Pipeline` when the
/// server begins a graceful shutdown: its handlers answer the request in
/// flight, then close it (the drain timeout closes it regardless).
public struct GRPCServerDraining: Sendable {
    public init() {}
}
