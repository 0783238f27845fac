import GRPCEngine
import HTTP2Core
import NIOCore
import NIOPosix
import TLSTransport
#if canImport(Glibc)
import Glibc
#endif

/// A gRPC client on one HTTP/2 connection (HTTP2Core's nghttp2 session,
/// TLSTransport's OpenSSL handler for TLS): what the `herald` client
/// subcommands call through. Unary and server-streaming calls; messages
/// are bytes (``ProtoMessage`` builds and reads them).
public final class GRPCClient: Sendable {
    /// The largest reply message accepted.
    static let maximumMessageBytes = 16 * 1024 * 1024

    private let channel: any Channel
    private let handler: GRPCClientHandler
    /// Where it is connected, for messages.
    public let target: ClientTarget

    private init(channel: any Channel, handler: GRPCClientHandler, target: ClientTarget) {
        self.channel = channel
        self.handler = handler
        self.target = target
    }

    /// Connects (TCP, then TLS when `target.tls` is set, then the HTTP/2 preface).
    ///
    /// - Throws: ``ClientFailure`` (UNAVAILABLE) saying in words what failed:
    ///   nothing listening, a name that does not resolve, a TLS handshake or
    ///   certificate failure, a timeout.
    public static func connect(to target: ClientTarget, timeout: Duration = .seconds(10)) async throws(ClientFailure) -> GRPCClient {
        let tlsContext: TLSContext?
        if let tls = target.tls {
            tlsContext = try makeTLSContext(tls)
        } else {
            tlsContext = nil
        }
        let group = MultiThreadedEventLoopGroup.singleton
        let ready = group.next().makePromise(of: Void.self)
        let handler = GRPCClientHandler(ready: ready, usesTLS: tlsContext != nil, authority: target.address)
        let serverName = target.tls?.serverName ?? target.host
        do {
            let channel = try await ClientBootstrap(group: ready.futureResult.eventLoop)
                .connectTimeout(TimeAmount(timeout))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if let tlsContext {
                            try channel.pipeline.syncOperations.addHandler(
                                OpenSSLHandler(context: tlsContext, serverName: serverName, handshakeTimeout: timeout))
                        }
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                }
                .connect(host: target.host, port: target.port).get()
            // A peer that accepts TCP but never speaks HTTP/2 (a TLS port without --tls) must not hang the client.
            let expiry = channel.eventLoop.scheduleTask(in: TimeAmount(timeout)) {
                ready.fail(GRPCStatus(.unavailable, "no HTTP/2 answer within \(timeout)"))
            }
            defer { expiry.cancel() }
            do {
                try await ready.futureResult.get()
            } catch {
                channel.close(promise: nil)
                throw error
            }
            return GRPCClient(channel: channel, handler: handler, target: target)
        } catch {
            ready.fail(error)  // (no-op when already completed)
            throw ConnectFailure.describe(error, target: target)
        }
    }

    private static func makeTLSContext(_ tls: ClientTLS) throws(ClientFailure) -> TLSContext {
        var certificate: String?
        var key: String?
        switch (tls.clientCertificateFile, tls.clientKeyFile) {
        case (nil, nil):
            break
        case (let certificateFile?, let keyFile?):
            certificate = try readText(certificateFile, what: "--client-cert")
            key = try readText(keyFile, what: "--client-key")
        default:
            throw .local("--client-cert and --client-key go together (mTLS needs both)")
        }
        if let caFile = tls.caFile { _ = try readText(caFile, what: "--ca-file") }
        do {
            return try TLSContext.client(trustedCAFile: tls.caFile, clientCertificatePEM: certificate, clientKeyPEM: key)
        } catch {
            throw .local("TLS setup failed: \(error)")
        }
    }

    /// A small text file (a PEM file, a token file), or a local failure naming the flag.
    public static func readText(_ path: String, what: String) throws(ClientFailure) -> String {
        guard let file = fopen(path, "rb") else {
            throw .local("cannot read \(what) \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count > 0 { bytes += chunk[0..<count] }
            if bytes.count > 1 << 20 { throw .local("\(what) \(path) is larger than 1 MiB") }
            if count < chunk.count { break }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// One call: the request message, then every reply message; the stream
    /// ends with the call (throwing its ``GRPCStatus`` unless OK).
    public func call(
        _ path: String, message: [UInt8], metadata: [(String, String)] = [], timeout: Duration? = .seconds(30)
    ) -> AsyncThrowingStream<[UInt8], any Error> {
        let (stream, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
        let handler = self.handler
        channel.eventLoop.execute {
            handler.start(path: path, message: message, metadata: metadata, timeout: timeout, continuation: continuation)
        }
        return stream
    }

    /// A unary call: the one reply message.
    ///
    /// - Throws: ``GRPCStatus`` the call ended with.
    public func unary(
        _ path: String, message: [UInt8], metadata: [(String, String)] = [], timeout: Duration? = .seconds(30)
    ) async throws -> [UInt8] {
        var reply: [UInt8]?
        for try await message in call(path, message: message, metadata: metadata, timeout: timeout) {
            guard reply == nil else { throw GRPCStatus(.internalError, "the server sent more than one reply to a unary call") }
            reply = message
        }
        guard let reply else { throw GRPCStatus(.internalError, "the server ended the call without a reply") }
        return reply
    }

    /// Closes the connection.
    public func close() async {
        let handler = self.handler
        channel.eventLoop.execute { handler.close() }
        try? await channel.closeFuture.get()
    }
}
