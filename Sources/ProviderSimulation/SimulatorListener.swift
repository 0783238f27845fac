package import NIOCore
import NIOPosix
package import TLSTransport

/// The listening side both simulators share: a TCP listener whose accepted
/// connections get TLS (``OpenSSLHandler``) and the handler the simulator
/// makes for them, tracked in ``SimulatorChannels``.
package enum SimulatorListener {
    /// The certificate and key to serve: the configured pair, or a generated
    /// self-signed one (also the CA clients trust).
    package static func identity(certificatePEM: String?, keyPEM: String?) throws -> (certificatePEM: String, keyPEM: String) {
        if let certificatePEM, let keyPEM { return (certificatePEM, keyPEM) }
        let generated = try SelfSignedCertificate.generate()
        return (generated.certificatePEM, generated.keyPEM)
    }

    /// Binds `host:port` (0: a free port) and serves.
    /// - Parameters:
    ///   - maxConnections: connections open at once; more are closed as they are accepted (nil: no limit).
    ///   - makeHandler: the connection handler for connection `id` on `loop` (called on that loop).
    package static func bind(
        host: String, port: Int, group: any EventLoopGroup, tls: TLSContext, handshakeTimeout: Duration = .seconds(10),
        maxConnections: Int? = nil, channels: SimulatorChannels,
        makeHandler: @escaping @Sendable (_ id: Int, _ loop: any EventLoop) -> any ChannelHandler
    ) async throws -> any Channel {
        try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .childChannelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                if let maxConnections, channels.openCount >= maxConnections {
                    return channel.close()
                }
                return channel.eventLoop.makeCompletedFuture {
                    let handler = makeHandler(channels.nextConnectionID(), channel.eventLoop)
                    try channel.pipeline.syncOperations.addHandlers([
                        try OpenSSLHandler(context: tls, handshakeTimeout: handshakeTimeout), handler,
                    ])
                    channels.track(channel)
                }
            }
            .bind(host: host, port: port)
            .get()
    }
}
