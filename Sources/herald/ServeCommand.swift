import ArgumentParser
import HeraldPrimitives
import HeraldService
import HeraldStorage
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// `herald serve`: runs the gRPC service until SIGTERM or SIGINT; SIGHUP
/// reloads the tokens file and the APNs and FCM routes files.
///
/// Every flag falls back to an environment variable (`HERALD_HOST`, …), then
/// to the config file, then to the embedded default; every layer's values
/// are checked as the flags are (ServeCommand+Validation.swift).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the Herald gRPC API (TLS with --tls-cert, else h2c) until SIGTERM/SIGINT."
    )

    @Option(help: "A config file of `key = value` lines named like these flags (env HERALD_CONFIG). Precedence: flag, environment (HERALD_<FLAG>), config file, default.")
    var config: String = ""

    @Flag(name: .customLong("check-config"), help: "Validate the flags, environment, config file, tokens file, APNs and FCM routes (reading the key files), print \"configuration OK\" and exit 0, or exit non-zero with the first problem; binds nothing, opens no store.")
    var checkConfig = false

    @Option(help: "Address to listen on (env HERALD_HOST).")
    var host: String = Settings.string("host") ?? "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one (env HERALD_PORT).")
    var port: Int = Settings.int("port") ?? 50051

    @Option(name: .customLong("data-dir"), help: "Directory of the embedded store (env HERALD_DATA_DIR; default: systemd's $STATE_DIRECTORY when set, else ./data). Resolved to an absolute path at start and logged.")
    var dataDirectory: String = Settings.string("data-dir") ?? ServeCommand.defaultDataDirectory()

    @Option(help: "The store: sqlite:PATH (default: herald.sqlite in --data-dir) or postgres://USER[:PASSWORD]@HOST:PORT/DATABASE[?sslmode=disable|require|verify-full][&host=/socket/dir] (also postgresql://), shared by any number of replicas (env HERALD_STORE). The password is never logged.")
    var store: String = Settings.string("store") ?? ""

    @Option(name: .customLong("replica-id"), help: "With a postgres:// store: this replica's name, recorded as the owner of its claims (env HERALD_REPLICA_ID; default HOSTNAME:PID). Keep it stable across restarts of one replica (a StatefulSet pod name, a systemd instance name) so a restart resolves its own unfinished claims at once instead of after their lease; never give two live replicas the same one.")
    var replicaID: String = Settings.string("replica-id") ?? ""

    @Option(name: .customLong("lease-seconds"), help: "With a postgres:// store: how long a claim holds without renewal (renewed every third of it while sending); a dead replica's claims are taken over by another after this (env HERALD_LEASE_SECONDS).")
    var leaseSeconds: Int = Settings.int("lease-seconds") ?? 30

    @Option(name: .customLong("max-concurrent-reads"), help: "GetMessage, ListMessages and CampaignReport calls reading at once; also the store capacity kept for them (SQLite reader threads; PostgreSQL connections of a read pool of their own, beside the 16 for writes) (env HERALD_MAX_CONCURRENT_READS).")
    var maxConcurrentReads: Int = Settings.int("max-concurrent-reads") ?? 8

    @Option(name: .customLong("max-queued-reads"), help: "Read-side calls waiting for one of those places; more are RESOURCE_EXHAUSTED at once (env HERALD_MAX_QUEUED_READS).")
    var maxQueuedReads: Int = Settings.int("max-queued-reads") ?? 64

    @Option(name: .customLong("read-timeout"), help: "Seconds one read-side query may run in the store before it is stopped (SQLite: interrupted; PostgreSQL: statement_timeout) and answered RESOURCE_EXHAUSTED (env HERALD_READ_TIMEOUT).")
    var readTimeout: Double = Settings.double("read-timeout") ?? 5

    @Option(help: "full: fsync each group commit before answering (survives power loss); process: the write is in the OS (survives kill -9, may lose the last commits on power loss) (env HERALD_DURABILITY).")
    var durability: String = Settings.string("durability") ?? "full"

    @Option(name: .customLong("tokens-file"), help: "Access tokens: lines of \"<label> <token> <bundle ids|*>\" (env HERALD_TOKENS_FILE). Without it Herald serves loopback only, unauthenticated.")
    var tokensFile: String = Settings.string("tokens-file") ?? ""

    @Option(name: .customLong("grace-seconds"), help: "How long after Schedule a traditional message waits (cancellable) before it is sent (env HERALD_GRACE_SECONDS).")
    var graceSeconds: Int = Settings.int("grace-seconds") ?? 30

    @Option(name: .customLong("context-aware-share"), help: "Share of users the A/B split puts in the context-aware cohort, 0...1 (env HERALD_CONTEXT_AWARE_SHARE).")
    var contextAwareShare: Double = Settings.double("context-aware-share") ?? 0.5

    @Option(name: .customLong("sim-record"), help: "With the bundled APNs and FCM simulators: append each delivery they accept to this file as JSON lines (\"service\": \"apns\" or \"fcm\").")
    var simulatorRecord: String = Settings.string("sim-record") ?? ""

    @Option(name: .customLong("apns-route"), help: ArgumentHelp(
        "An APNs route (repeatable): \"team=T key-id=K key=AuthKey.p8 bundles=com.a,com.b env=production|sandbox|both [endpoint=host:port] [ca=file]\" or with cert=… cert-key=… instead of team/key-id/key. Without routes Herald delivers to the bundled simulator."))
    var apnsRoutes: [String] = Settings.list("apns-route")

    @Option(name: .customLong("apns-routes-file"), help: "A file of APNs routes, one per line (env HERALD_APNS_ROUTES_FILE).")
    var apnsRoutesFile: String = Settings.string("apns-routes-file") ?? ""

    @Option(name: .customLong("fcm-route"), help: ArgumentHelp(
        "An FCM route (repeatable): \"project=ID key=service-account.json bundles=com.a,com.b [endpoint=host:port] [token-url=https://…] [ca=file]\" (bundles are Android package names). Without FCM routes Herald delivers Android messages to the bundled FCM simulator."))
    var fcmRoutes: [String] = Settings.list("fcm-route")

    @Option(name: .customLong("fcm-routes-file"), help: "A file of FCM routes, one per line; SIGHUP re-reads it (env HERALD_FCM_ROUTES_FILE).")
    var fcmRoutesFile: String = Settings.string("fcm-routes-file") ?? ""

    @Option(name: .customLong("fcm-rate-per-minute"), help: "Most FCM messages sent per minute per Firebase project (a token bucket; FCM's default quota is 600000).")
    var fcmRatePerMinute: Int = Settings.int("fcm-rate-per-minute") ?? 600_000

    @Option(name: .customLong("fcm-sim-unregistered"), help: "Bundled FCM simulator: answer 404 UNREGISTERED for TOKEN (repeatable).")
    var fcmSimulatorUnregistered: [String] = Settings.list("fcm-sim-unregistered")

    @Option(name: .customLong("fcm-sim-other-sender"), help: "Bundled FCM simulator: answer 403 SENDER_ID_MISMATCH for TOKEN (repeatable).")
    var fcmSimulatorOtherSender: [String] = Settings.list("fcm-sim-other-sender")

    @Option(name: .customLong("fcm-sim-fault"), help: "Bundled FCM simulator: answer the next requests with a fault, KIND[=SECONDS|MS][:COUNT] as for `herald fcm-sim --fault` (quota, internal, unavailable, bad-gateway, third-party-auth, slow, goaway, drop, invalid-grant; repeatable, in order).")
    var fcmSimulatorFaults: [String] = Settings.list("fcm-sim-fault")

    @Option(name: .customLong("sim-unregistered"), help: "Bundled simulator: answer 410 Unregistered for TOKEN[:timestamp-ms] (repeatable).")
    var simulatorUnregistered: [String] = Settings.list("sim-unregistered")

    @Option(name: .customLong("sim-bad-token"), help: "Bundled simulator: answer 400 BadDeviceToken for TOKEN (repeatable).")
    var simulatorBadTokens: [String] = Settings.list("sim-bad-token")

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical (env HERALD_LOG_LEVEL).")
    var logLevel: String = Settings.string("log-level") ?? "info"

    @Option(name: .customLong("log-format"), help: "text or json; both with UTC millisecond timestamps (env HERALD_LOG_FORMAT).")
    var logFormat: String = Settings.string("log-format") ?? "text"

    @Option(name: .customLong("access-log"), help: "Append one line per RPC (method, code, duration, peer, bundle; never tokens or content) to this file; without it they are logged at debug level.")
    var accessLog: String = Settings.string("access-log") ?? ""

    @Option(name: .customLong("admin-port"), help: "Serve /metrics, /healthz and /readyz over HTTP/1.1 on this port (0 picks one); off when not given (or -1).")
    var adminPort: Int = Settings.int("admin-port") ?? -1

    @Option(name: .customLong("admin-host"), help: "Address of the admin listener.")
    var adminHost: String = Settings.string("admin-host") ?? "127.0.0.1"

    @Option(name: .customLong("admin-timeout"), help: "Seconds an admin connection has to send a whole request; then it is closed.")
    var adminTimeout: Double = Settings.double("admin-timeout") ?? 5

    @Option(name: .customLong("admin-max-connections-per-peer"), help: "Most admin connections one peer address may hold open (of 32); more are closed on accept.")
    var adminMaxConnectionsPerPeer: Int = Settings.int("admin-max-connections-per-peer") ?? 8

    @Option(name: .customLong("max-concurrent-streams"), help: "SETTINGS_MAX_CONCURRENT_STREAMS advertised per connection.")
    var maxConcurrentStreams: Int = Settings.int("max-concurrent-streams") ?? 100

    @Option(name: .customLong("drain-seconds"), help: "Bound on waiting for in-flight RPCs at shutdown.")
    var drainSeconds: Int = Settings.int("drain-seconds") ?? 10

    @Option(name: .customLong("max-connections"), help: "Most client connections open at once; more are closed on accept (lowered to fit the descriptor limit).")
    var maxConnections: Int = Settings.int("max-connections") ?? 4096

    @Option(name: .customLong("max-connections-per-peer"), help: "Most connections open at once from one peer address (IPv6: one /64; loopback included); more are closed on accept. 0: no cap.")
    var maxConnectionsPerPeer: Int = Settings.int("max-connections-per-peer") ?? 256

    @Option(name: .customLong("unauthenticated-max-message-bytes"), help: "Largest request message of the methods callable without a token (Health, reflection, Status); larger: RESOURCE_EXHAUSTED.")
    var unauthenticatedMaxMessageBytes: Int = Settings.int("unauthenticated-max-message-bytes") ?? 65536

    @Option(name: .customLong("unauthenticated-buffer-kib"), help: "Request bytes (KiB) all calls of those methods together may hold (their own budget, apart from --max-buffered-request-mib); past it: RESOURCE_EXHAUSTED.")
    var unauthenticatedBufferKiB: Int = Settings.int("unauthenticated-buffer-kib") ?? 4096

    @Option(name: .customLong("unauthenticated-streams-per-connection"), help: "Streaming calls of those methods (Health/Watch, reflection) open at once per connection; more: RESOURCE_EXHAUSTED.")
    var unauthenticatedStreamsPerConnection: Int = Settings.int("unauthenticated-streams-per-connection") ?? 16

    @Option(name: .customLong("unauthenticated-streams"), help: "The same bound for the whole server.")
    var unauthenticatedStreams: Int = Settings.int("unauthenticated-streams") ?? 1024

    @Option(name: .customLong("unauthenticated-stream-max-age"), help: "Seconds after which such a streaming call is ended with UNAVAILABLE (the client calls again).")
    var unauthenticatedStreamMaxAge: Double = Settings.double("unauthenticated-stream-max-age") ?? 1800

    @Option(name: .customLong("max-buffered-request-mib"), help: "Request bytes (MiB) all connections together may hold for calls still arriving or running; past it: RESOURCE_EXHAUSTED.")
    var maxBufferedRequestMiB: Int = Settings.int("max-buffered-request-mib") ?? 128

    @Option(name: .customLong("max-connection-buffer-mib"), help: "The same bound (MiB) per connection.")
    var maxConnectionBufferMiB: Int = Settings.int("max-connection-buffer-mib") ?? 16

    @Option(name: .customLong("handshake-timeout"), help: "Seconds a new connection has to send the HTTP/2 preface and SETTINGS.")
    var handshakeTimeout: Double = Settings.double("handshake-timeout") ?? 10

    @Option(name: .customLong("idle-timeout"), help: "Seconds without an open call before a connection gets GOAWAY.")
    var idleTimeout: Double = Settings.double("idle-timeout") ?? 300

    @Option(name: .customLong("keepalive-interval"), help: "Seconds of silence from a peer before Herald PINGs it.")
    var keepaliveInterval: Double = Settings.double("keepalive-interval") ?? 60

    @Option(name: .customLong("keepalive-timeout"), help: "Seconds to wait for anything after that PING before closing.")
    var keepaliveTimeout: Double = Settings.double("keepalive-timeout") ?? 20

    @Option(name: .customLong("request-receive-timeout"), help: "Seconds a call's request (headers to end of body) may take to arrive.")
    var requestReceiveTimeout: Double = Settings.double("request-receive-timeout") ?? 30

    @Option(name: .customLong("apns-response-timeout"), help: "Seconds to wait for APNs to answer a request before resetting the stream and retrying it.")
    var apnsResponseTimeout: Int = Settings.int("apns-response-timeout") ?? 30

    @Option(name: .customLong("route-in-flight"), help: "Messages sending at once per APNs route (credentials + endpoint).")
    var routeInFlight: Int = Settings.int("route-in-flight") ?? 256

    @Option(name: .customLong("route-queue"), help: "Messages waiting per APNs route beyond --route-in-flight; more are deferred until it has room.")
    var routeQueue: Int = Settings.int("route-queue") ?? 64

    @Option(name: .customLong("retention-days"), help: "Days a finished message (and its idempotency key) is kept after its last state change; then it is deleted in the background (env HERALD_RETENTION_DAYS).")
    var retentionDays: Int = Settings.int("retention-days") ?? 30

    @Option(name: .customLong("tls-cert"), help: "Serve gRPC over TLS (ALPN h2, TLS 1.2+) with this PEM certificate, leaf first then its chain (env HERALD_TLS_CERT); SIGHUP re-reads it.")
    var tlsCert: String = Settings.string("tls-cert") ?? ""

    @Option(name: .customLong("tls-key"), help: "The PEM private key of --tls-cert; refused when group or others may read it (env HERALD_TLS_KEY).")
    var tlsKey: String = Settings.string("tls-key") ?? ""

    @Option(name: .customLong("tls-client-ca"), help: "mTLS: require a client certificate issued by a CA in this PEM file; clients without one fail the handshake (env HERALD_TLS_CLIENT_CA).")
    var tlsClientCA: String = Settings.string("tls-client-ca") ?? ""

    @Flag(name: .customLong("allow-plaintext"), help: "Serve h2c (no TLS) on a non-loopback --host, e.g. behind a mesh sidecar that terminates TLS (env HERALD_ALLOW_PLAINTEXT=true). Without it such a listener needs --tls-cert.")
    var allowPlaintextFlag = false

    @Flag(name: .customLong("admin-tls"), help: "Serve the admin listener over TLS with --tls-cert/--tls-key (env HERALD_ADMIN_TLS=true).")
    var adminTLSFlag = false

    /// `--allow-plaintext`, or `allow-plaintext = true` in the environment or config file.
    var allowPlaintext: Bool { allowPlaintextFlag || Settings.bool("allow-plaintext") == true }
    /// `--admin-tls`, or `admin-tls = true` in the environment or config file.
    var adminTLS: Bool { adminTLSFlag || Settings.bool("admin-tls") == true }

    @Option(name: .customLong("retention-seconds"), help: .hidden)  // testing and bench/retention.sh: overrides --retention-days
    var retentionSeconds: Int?

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        let format = LogFormat(rawValue: logFormat) ?? .text
        LoggingSystem.bootstrap { label in HeraldLogHandler(label: label, format: format, level: level) }
        let logger = Logger(label: "herald")
        if !pinMallocMmapThreshold() {
            logger.warning("mallopt(M_MMAP_THRESHOLD) failed; large request buffers may stay resident after release")
        }

        // SIGHUP reloads (ReloadService traps it once serving); ignored
        // until then, never the default action (ending the process).
        guard ignoreSIGHUP() else { throw ValidationError("cannot set SIGHUP's disposition: \(String(cString: strerror(errno)))") }
        let configuration = try makeConfiguration(logger: logger)
        if checkConfig {
            try HeraldServer.checkDataDirectory(configuration.dataDirectory)
            print("configuration OK")
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
        }
    }
}
