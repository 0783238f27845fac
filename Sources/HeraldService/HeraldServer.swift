import GRPCServer
import Logging

/// Herald's version, reported by Status and `herald --version`.
public enum HeraldVersion {
    public static let current = "0.1.0"
}

/// How one Herald instance is set up.
public struct HeraldConfiguration: Sendable {
    public var host = "127.0.0.1"
    public var port = 50051
    /// Where the embedded store lives.
    public var dataDirectory = "./data"
    /// The gRPC engine's limits (message size, header list, streams).
    public var grpc = GRPCServerConfiguration()
    /// Tokens and the bundles they allow; empty serves loopback only.
    public var accessPolicy = AccessPolicy()
    /// How long in-flight RPCs may take to finish on shutdown.
    public var drainTimeout: Duration = .seconds(10)

    public init() {}
}

/// A configuration Herald refuses to start with.
public struct ConfigurationError: Error, CustomStringConvertible {
    public var description: String
}

/// One Herald instance: the gRPC server with Herald's services registered.
public final class HeraldServer: Sendable {
    public let configuration: HeraldConfiguration
    public let state = ServingStateCell()
    private let server: GRPCServer
    private let logger: Logger

    public init(configuration: HeraldConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        var grpc = configuration.grpc
        grpc.host = configuration.host
        grpc.port = configuration.port
        let server = GRPCServer(configuration: grpc, logger: logger)
        self.server = server

        let health = HealthService(state: state)
        server.register(HealthService.checkPath, .sync(health.check))
        let status = StatusService(
            version: HeraldVersion.current,
            startedAtMilliseconds: WallClock.nowMilliseconds(),
            startedAt: .now,
            state: state,
            serverStats: { server.stats() }
        )
        server.register(StatusService.path, .sync(status.status))
        let render = RenderService(policy: configuration.accessPolicy, now: WallClock.nowMilliseconds)
        server.register(RenderService.path, DomainStatus.sync(render.render))
    }

    /// Binds and starts serving; returns the bound address.
    ///
    /// - Throws: `HeraldServer.ConfigurationError` when no tokens are
    ///   configured and the host is not a loopback address.
    public func start() async throws -> (host: String, port: Int) {
        if configuration.accessPolicy.isOpen && !AccessPolicy.isLoopback(configuration.host) {
            throw ConfigurationError(description:
                "no access tokens are configured, so Herald serves on loopback only; "
                + "refusing to listen on \(configuration.host) (give --tokens-file, or use 127.0.0.1)")
        }
        let address = try await server.start()
        state.set(.serving)
        logger.info("serving", metadata: ["host": "\(address.host)", "port": "\(address.port)"])
        return address
    }

    /// Stops taking work (Health turns NOT_SERVING), sends GOAWAY, lets
    /// in-flight RPCs finish within the drain bound, then stops.
    public func shutdown() async {
        state.set(.draining)
        logger.info("draining", metadata: ["timeout": "\(configuration.drainTimeout)"])
        await server.shutdownGracefully(timeout: configuration.drainTimeout)
        logger.info("stopped")
    }
}
