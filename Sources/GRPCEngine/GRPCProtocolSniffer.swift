import NIOCore

/// The first handler of a connection on a server with
/// `GRPCServerConfiguration.http1Pipeline` set: it compares the first bytes
/// with the HTTP/2 connection preface once, installs either the HTTP/2
/// engine (`GRPCConnection`) or the HTTP/1.1 handlers behind itself, hands
/// them what it read, and leaves the pipeline. Nothing of it stays on the
/// gRPC path. A connection that sends too little to decide within the
/// handshake timeout is closed.
final class GRPCProtocolSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// RFC 9113 §3.4.
    static let preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// What the first bytes say.
    enum Verdict: Equatable {
        /// A prefix of the preface: more bytes are needed.
        case undecided
        case http2
        case http1
    }

    /// One prefix comparison of what has arrived so far.
    static func verdict(_ bytes: ByteBuffer) -> Verdict {
        let count = min(bytes.readableBytes, preface.count)
        let matches = bytes.readableBytesView.prefix(count).elementsEqual(preface.prefix(count))
        if !matches { return .http1 }
        return count == preface.count ? .http2 : .undecided
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
