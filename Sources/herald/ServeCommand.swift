import Dispatch
import HeraldService
import HeraldStore
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// `herald serve`: runs the gRPC service until SIGTERM or SIGINT.
///
/// Every flag falls back to an environment variable (`HERALD_HOST`, …) and
/// then to the embedded default.
struct ServeCommand {
    static func spec() -> CommandSpec {
        CommandSpec(name: "serve", abstract: "Serve the Herald gRPC API (h2c) until SIGTERM/SIGINT.", discussion: nil, options: [
            .option("config", "A config file of `key = value` lines named like these flags (env HERALD_CONFIG). Precedence: flag, environment (HERALD_<FLAG>), config file, default.", default: defaultText("")),
            .option("host", "Address to listen on (env HERALD_HOST).", default: defaultText(Settings.string("host") ?? "127.0.0.1")),
            .option("port", "Port to listen on; 0 picks a free one (env HERALD_PORT).", default: defaultText(Settings.int("port") ?? 50051)),
            .option("data-dir", "Directory of the embedded store (env HERALD_DATA_DIR).", default: defaultText(Settings.string("data-dir") ?? "./data")),
            .option("durability", "full: fsync each group commit before answering (survives power loss); process: the write is in the OS (survives kill -9, may lose the last commits on power loss) (env HERALD_DURABILITY).", default: defaultText(Settings.string("durability") ?? "full")),
            .option("tokens-file", "Access tokens: lines of \"<label> <token> <bundle ids|*>\" (env HERALD_TOKENS_FILE). Without it Herald serves loopback only, unauthenticated.", default: defaultText(Settings.string("tokens-file") ?? "")),
            .option("grace-seconds", "How long after Schedule a traditional message waits (cancellable) before it is sent (env HERALD_GRACE_SECONDS).", default: defaultText(Settings.int("grace-seconds") ?? 30)),
            .option("context-aware-share", "Share of users the A/B split puts in the context-aware cohort, 0...1 (env HERALD_CONTEXT_AWARE_SHARE).", default: defaultText(Settings.double("context-aware-share") ?? 0.5)),
            .option("sim-record", "With the bundled APNs simulator: append each delivery it accepts to this file as JSON lines.", default: defaultText(Settings.string("sim-record") ?? "")),
            .repeatable("apns-route", "An APNs route (repeatable): \"team=T key-id=K key=AuthKey.p8 bundles=com.a,com.b env=production|sandbox|both [endpoint=host:port] [ca=file]\" or with cert=… cert-key=… instead of team/key-id/key. Without routes Herald delivers to the bundled simulator."),
            .option("apns-routes-file", "A file of APNs routes, one per line (env HERALD_APNS_ROUTES_FILE).", default: defaultText(Settings.string("apns-routes-file") ?? "")),
            .repeatable("sim-unregistered", "Bundled simulator: answer 410 Unregistered for TOKEN[:timestamp-ms] (repeatable)."),
            .repeatable("sim-bad-token", "Bundled simulator: answer 400 BadDeviceToken for TOKEN (repeatable)."),
            .option("log-level", "trace, debug, info, notice, warning, error or critical (env HERALD_LOG_LEVEL).", default: defaultText(Settings.string("log-level") ?? "info")),
            .option("max-concurrent-streams", "SETTINGS_MAX_CONCURRENT_STREAMS advertised per connection.", default: defaultText(Settings.int("max-concurrent-streams") ?? 100)),
            .option("drain-seconds", "Bound on waiting for in-flight RPCs at shutdown.", default: defaultText(Settings.int("drain-seconds") ?? 10)),
        ])
    }

    var config: String
    var host: String
    var port: Int
    var dataDirectory: String
    var durability: String
    var tokensFile: String
    var graceSeconds: Int
    var contextAwareShare: Double
    var simulatorRecord: String
    var apnsRoutes: [String]
    var apnsRoutesFile: String
    var simulatorUnregistered: [String]
    var simulatorBadTokens: [String]
    var logLevel: String
    var maxConcurrentStreams: Int
    var drainSeconds: Int

    init(_ parsed: ParsedOptions) throws(ValidationError) {
        config = parsed.string("config") ?? ""
        host = parsed.string("host") ?? Settings.string("host") ?? "127.0.0.1"
        port = try parsed.int("port") ?? Settings.int("port") ?? 50051
        dataDirectory = parsed.string("data-dir") ?? Settings.string("data-dir") ?? "./data"
        durability = parsed.string("durability") ?? Settings.string("durability") ?? "full"
        tokensFile = parsed.string("tokens-file") ?? Settings.string("tokens-file") ?? ""
        graceSeconds = try parsed.int("grace-seconds") ?? Settings.int("grace-seconds") ?? 30
        contextAwareShare = try parsed.double("context-aware-share") ?? Settings.double("context-aware-share") ?? 0.5
        simulatorRecord = parsed.string("sim-record") ?? Settings.string("sim-record") ?? ""
        apnsRoutes = parsed.strings("apns-route") ?? Settings.list("apns-route")
        apnsRoutesFile = parsed.string("apns-routes-file") ?? Settings.string("apns-routes-file") ?? ""
        simulatorUnregistered = parsed.strings("sim-unregistered") ?? Settings.list("sim-unregistered")
        simulatorBadTokens = parsed.strings("sim-bad-token") ?? Settings.list("sim-bad-token")
        logLevel = parsed.string("log-level") ?? Settings.string("log-level") ?? "info"
        maxConcurrentStreams = try parsed.int("max-concurrent-streams") ?? Settings.int("max-concurrent-streams") ?? 100
        drainSeconds = try parsed.int("drain-seconds") ?? Settings.int("drain-seconds") ?? 10
    }

    func validate() throws(ValidationError) {
        if let problem = Settings.problem { throw ValidationError(problem) }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0...65535, got \(port)") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("--log-level: unknown level \"\(logLevel)\"") }
        guard maxConcurrentStreams >= 1 else { throw ValidationError("--max-concurrent-streams must be at least 1") }
        guard ["full", "process"].contains(durability) else { throw ValidationError("--durability must be full or process") }
        guard (0...3600).contains(graceSeconds) else { throw ValidationError("--grace-seconds must be 0...3600") }
        guard (0...1).contains(contextAwareShare) else { throw ValidationError("--context-aware-share must be between 0 and 1") }
        guard drainSeconds >= 0 else { throw ValidationError("--drain-seconds must not be negative") }
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "herald")

        var configuration = HeraldConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.dataDirectory = dataDirectory
        configuration.grpc.maxConcurrentStreams = maxConcurrentStreams
        configuration.drainTimeout = .seconds(drainSeconds)
        configuration.graceSeconds = Int64(graceSeconds)
        configuration.durability = durability == "process" ? .processCrash : .sqliteFull
        configuration.contextAwareShare = contextAwareShare
        configuration.simulatorRecordPath = simulatorRecord.isEmpty ? nil : simulatorRecord
        for entry in simulatorUnregistered {
            let parts = entry.split(separator: ":", maxSplits: 1)
            let timestamp = parts.count == 2 ? Int64(parts[1]) : nil
            // Without a timestamp: "unregistered as of start", as `apns-sim` does.
            configuration.simulatorFaults.unregistered[String(parts[0]).lowercased()] = timestamp ?? epochMilliseconds()
        }
        var routeSpecs = try apnsRoutes.enumerated().map { try APNsRouteSpec.parse($1, source: "--apns-route #\($0 + 1)") }
        if !apnsRoutesFile.isEmpty { routeSpecs += try APNsRouteSpec.parseFile(path: apnsRoutesFile) }
        if !routeSpecs.isEmpty {
            configuration.apnsRoutes = try APNsRouteSpec.makeRoutes(routeSpecs)
            logger.info("APNs routes configured", metadata: ["routes": "\(routeSpecs.count)"])
        }
        for token in simulatorBadTokens { configuration.simulatorFaults.badTokens.insert(token.lowercased()) }
        if !tokensFile.isEmpty {
            configuration.accessPolicy = try AccessPolicy.load(path: tokensFile)
            logger.info("access tokens loaded", metadata: ["labels": "\(configuration.accessPolicy.grants.map(\.label))"])
        }

        let signals = ShutdownSignals()
        let server = HeraldServer(configuration: configuration, logger: logger)
        let address = try await server.start()
        // The first stdout line names the bound port (port 0 picks one).
        print("listening on \(address.host):\(address.port)")
        fflush(nil)  // all streams: `stdout` is not concurrency-safe to name

        let received = await signals.next()
        logger.info("signal received, shutting down", metadata: ["signal": "\(received)"])
        await server.shutdown()
    }
}

/// Turns SIGTERM and SIGINT into an awaitable event.
final class ShutdownSignals: Sendable {
    private let stream: AsyncStream<Int32>
    private nonisolated(unsafe) let sources: [DispatchSourceSignal]

    init(_ signals: [Int32] = [SIGTERM, SIGINT]) {
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        self.stream = stream
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
    }

    func next() async -> Int32 {
        for await number in stream { return number }
        return 0
    }
}
