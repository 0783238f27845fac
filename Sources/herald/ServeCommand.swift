import ArgumentParser
import GRPCEngine
import HeraldPrimitives
import HeraldService
import HeraldStorage
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// `herald serve`: runs the gRPC service until SIGTERM or SIGINT; SIGHUP
/// reloads the tokens file, the APNs and FCM routes files and the TLS files.
///
/// Its settings are `ServeSettings.table`: each a flag (captured here as
/// the arguments ArgumentParser does not recognize), an environment
/// variable and a config-file key, resolved and checked once by
/// `resolveSettings()` (ServeCommand+Validation.swift).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the Herald gRPC API (TLS with --tls-cert, else h2c) until SIGTERM/SIGINT.",
        usage: "herald serve [--check-config] [--config <file>] [--<setting> <value>]...",
        discussion: SettingsReference.help(ServeSettings.table)
    )

    @Option(help: "A config file of `name = value` lines named like the settings (env HERALD_CONFIG). Precedence: flag, environment (HERALD_<NAME>), config file, default.")
    var config: String?

    @Flag(name: .customLong("check-config"), help: "Validate the flags, environment, config file, tokens file, APNs and FCM routes (reading the key files), print \"configuration OK\" and exit 0, or exit non-zero with the first problem; binds nothing, opens no store.")
    var checkConfig = false

    @Option(name: .customLong("retention-seconds"), help: .hidden)  // testing and bench/retention.sh: overrides --retention-days
    var retentionSeconds: Int?

    /// The settings' flags (`--port 0`, `--apns-route SPEC`, …), read by `resolveSettings()`.
    @Argument(parsing: .allUnrecognized, help: .hidden)
    var settingArguments: [String] = []

    func run() async throws {
        // Before anything starts a NIO singleton: sized to the usable CPUs.
        CPUBudget.sizeNIOSingletons(environment: environmentValue)
        let settings = try resolveSettings()
        let level = Logger.Level(rawValue: settings[ServeSettings.logLevel]) ?? .info
        let format = LogFormat(rawValue: settings[ServeSettings.logFormat]) ?? .text
        LoggingSystem.bootstrap { label in HeraldLogHandler(label: label, format: format, level: level) }
        let logger = Logger(label: "herald")
        // A misspelled variable (HERALD_GRACE_SECOND) is said, not ignored in silence.
        let unknown = ServeSettings.table.unknownVariables(environmentNames())
        for warning in unknown { logger.warning("\(warning)") }
        if !pinMallocMmapThreshold() {
            logger.warning("mallopt(M_MMAP_THRESHOLD) failed; large request buffers may stay resident after release")
        }

        // SIGHUP reloads (ReloadService traps it once serving); ignored
        // until then, never the default action (ending the process).
        guard ignoreSIGHUP() else { throw ValidationError("cannot set SIGHUP's disposition: \(String(cString: strerror(errno)))") }
        let configuration = try makeConfiguration(settings, logger: logger)
        if checkConfig {
            try HeraldServer.checkDataDirectory(configuration.dataDirectory)
            print(unknown.isEmpty ? "configuration OK" : "configuration OK, with \(unknown.count) warning(s) above")
            return
        }
        // Port in use, data dir not a directory: said before anything starts.
        try HeraldServer.checkBeforeStarting(configuration)

        let server = HeraldServer(configuration: configuration, logger: logger)
        // SIGTERM and SIGINT start the graceful shutdown (HeraldServices.swift
        // gives its order); `run()` returns once the store is closed.
        let group = ServiceGroup(services: [server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        try await withThrowingDiscardingTaskGroup { tasks in
            tasks.addTask { try await group.run() }
            let address = try await server.listeningAddress()
            // The first stdout line names the bound port (port 0 picks one).
            print("listening on \(address.host):\(address.port)")
            if let admin = try await server.adminListeningAddress() {
                print("admin listening on \(admin.host):\(admin.port)")
            }
            fflush(nil)  // all streams: `stdout` is not concurrency-safe to name
            // Once serving: a start that fails says only why (one line).
            logger.info("\(configuration.grpc.eventLoopThreads) event loops, \(configuration.grpc.computeThreads) compute threads; \(CPUBudget.atStart.summary)")
        }
    }
}
