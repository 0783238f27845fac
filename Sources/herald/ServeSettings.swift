import APNsProvider
import FCMProvider
import ArgumentParser
import HeraldCore
import HeraldService
import Logging

/// `herald serve`'s settings, each declared once (Setting.swift says what
/// is derived from them). Defaults come from `HeraldConfiguration()` (and
/// the configurations inside it), so none is written twice.
enum ServeSettings {
    /// The service's own defaults.
    private static let base = HeraldConfiguration()
    private static let admin = AdminConfiguration()

    /// Every setting, in the order they are checked and listed.
    static let table = SettingsTable(command: "serve", layered: true, settings: [
        host, port, dataDirectory, store, replicaID, leaseSeconds, maxConcurrentReads, maxQueuedReads, readTimeout, maxEventStreams,
        durability, tokensFile, graceSeconds, contextAwareShare, simulatorRecord,
        apnsRoutes, apnsRoutesFile, fcmRoutes, fcmRoutesFile, fcmRatePerMinute, deliveryPolicies, deliveryPoliciesFile,
        simulatorUnregistered, simulatorBadTokens, fcmSimulatorUnregistered, fcmSimulatorOtherSender, fcmSimulatorFaults,
        logLevel, logFormat, accessLog, adminPort, adminHost, adminTimeout, adminMaxConnectionsPerPeer,
        eventLoops, computeThreads, maxConcurrentStreams, drainSeconds, maxConnections, maxConnectionsPerPeer,
        unauthenticatedMaxMessageBytes, unauthenticatedBufferKiB, unauthenticatedStreamsPerConnection,
        unauthenticatedStreams, unauthenticatedStreamMaxAge, maxBufferedRequestMiB, maxConnectionBufferMiB,
        handshakeTimeout, idleTimeout, keepaliveInterval, keepaliveTimeout, requestReceiveTimeout,
        apnsResponseTimeout, routeInFlight, routeQueue, retentionDays,
        tlsCert, tlsKey, tlsClientCA, allowPlaintext, adminTLS,
    ])

    // MARK: Listener and store

    static let host = Setting.text(
        "host", placeholder: "address", default: base.host, "Address to listen on.", check: SettingRules.notEmpty)
    static let port = Setting.integer(
        "port", default: base.port, "Port to listen on; 0 picks a free one.", check: SettingRules.range(0...65535))
    static let dataDirectory = Setting.text(
        "data-dir", placeholder: "DIR", default: { ServeCommand.defaultDataDirectory() },
        defaultText: "$STATE_DIRECTORY, else ./data",
        "Directory of the embedded store (systemd's $STATE_DIRECTORY when set, else ./data); made absolute at start and logged.",
        check: SettingRules.notEmpty)
    static let store = Setting.text(
        "store", placeholder: "URL", defaultText: "sqlite:<data-dir>/herald.sqlite",
        "The store: sqlite:PATH or postgres://USER[:PASSWORD]@HOST:PORT/DATABASE[?sslmode=…][&host=/socket/dir] (also postgresql://), shared by any number of replicas; the password is never logged."
    ) { value in
        do { _ = try StoreLocation.parse(value.isEmpty ? "sqlite:-" : value, replicaID: "check"); return nil } catch {
            return String(describing: error)
        }
    }
    static let replicaID = Setting.text(
        "replica-id", placeholder: "name", defaultText: "HOSTNAME:PID",
        "With a postgres:// store: this replica's name, the owner of its claims; keep it stable across restarts of one replica, never shared by two live ones."
    ) { $0.count <= 200 ? nil : "must be at most 200 characters" }
    static let leaseSeconds = Setting.integer(
        "lease-seconds", default: Int(StoreLocation.defaultLeaseMilliseconds / 1000),
        "With a postgres:// store: how long a claim holds without renewal; a dead replica's claims are taken over after this.",
        check: SettingRules.range(3...3600))
    static let maxConcurrentReads = Setting.integer(
        "max-concurrent-reads", default: base.readSide.maxConcurrent,
        "GetMessage, ListMessages and CampaignReport calls reading at once; also the store capacity kept for them.",
        check: SettingRules.range(1...256))
    static let maxQueuedReads = Setting.integer(
        "max-queued-reads", default: base.readSide.maxQueued,
        "Read-side calls waiting for one of those places; more are RESOURCE_EXHAUSTED at once.",
        check: SettingRules.range(0...100_000))
    static let readTimeout = Setting.number(
        "read-timeout", default: base.readSide.timeout.timeInterval,
        "Seconds one read-side query may run in the store before it is stopped and answered RESOURCE_EXHAUSTED."
    ) { $0 >= 0.01 && $0 <= 3600 ? nil : "must be 0.01...3600 seconds, got \($0)" }
    static let maxEventStreams = Setting.integer(
        "max-event-streams", default: base.readSide.maxEventStreams,
        "StreamEvents calls open at once; more are RESOURCE_EXHAUSTED.",
        check: SettingRules.range(1...10_000))
    static let durability = Setting.choice(
        "durability", ["full", "process"], default: base.durability == .processCrash ? "process" : "full",
        "full: fsync each group commit before answering (survives power loss); process: the write is in the OS (survives kill -9).",
        problem: "must be full or process")

    // MARK: Access and delivery

    static let tokensFile = Setting.text(
        "tokens-file", placeholder: "FILE",
        "Access tokens: lines of \"<label> <token> <bundle ids|*>\"; without it Herald serves loopback only, unauthenticated.",
        reloadable: true)
    static let graceSeconds = Setting.integer(
        "grace-seconds", default: Int(base.graceSeconds),
        "How long after Schedule a traditional message waits (cancellable) before it is sent.",
        check: SettingRules.range(0...3600))
    static let contextAwareShare = Setting.number(
        "context-aware-share", default: base.contextAwareShare,
        "Share of users the A/B split puts in the context-aware cohort, 0...1."
    ) { (0...1).contains($0) ? nil : "must be between 0 and 1, got \($0)" }
    static let simulatorRecord = Setting.text(
        "sim-record", placeholder: "FILE",
        "With the bundled APNs and FCM simulators: append each delivery they accept to this file as JSON lines.")
    static let apnsRoutes = Setting.list(
        "apns-route", placeholder: "SPEC",
        "An APNs route: \"team=T key-id=K key=AuthKey.p8 bundles=com.a,com.b env=production|sandbox|both [endpoint=host:port] [ca=file]\" or cert=… cert-key=…; without routes, the bundled simulator."
    ) { raw, origin in _ = try APNsRouteSpec.parse(raw, source: origin) }
    static let apnsRoutesFile = Setting.text(
        "apns-routes-file", placeholder: "FILE", "A file of APNs routes, one per line.", reloadable: true)
    static let fcmRoutes = Setting.list(
        "fcm-route", placeholder: "SPEC",
        "An FCM route: \"project=ID key=service-account.json bundles=com.a,com.b [endpoint=host:port] [token-url=https://…] [ca=file]\"; without FCM routes, the bundled FCM simulator."
    ) { raw, origin in _ = try FCMRouteSpec.parse(raw, source: origin) }
    static let fcmRoutesFile = Setting.text(
        "fcm-routes-file", placeholder: "FILE", "A file of FCM routes, one per line.", reloadable: true)
    static let fcmRatePerMinute = Setting.integer(
        "fcm-rate-per-minute", default: base.fcmRatePerMinute,
        "Most FCM messages sent per minute per Firebase project (a token bucket; FCM's default quota).",
        check: SettingRules.range(1...100_000_000, " messages per minute"))

    // MARK: Delivery policies (SPEC §4b, docs/DELIVERY-POLICY.md)

    static let deliveryPolicies = Setting.list(
        "delivery-policy", placeholder: "SPEC",
        "A delivery policy: \"bundles=com.a,com.b [timezone=ZONE] [quiet-hours=HH:MM-HH:MM] [cap=N/PERIOD]… [campaign-cap=N/PERIOD]… [max-per-second=R]\" (PERIOD: <int>s|m|h|d); a bundle has at most one."
    ) { raw, origin in
        do { _ = try PolicyRules.parse(raw, zoneProblem: DeliveryPolicySources.zoneProblem()) } catch {
            throw ValidationError("\(origin): \(error)")
        }
    }
    static let deliveryPoliciesFile = Setting.text(
        "delivery-policies-file", placeholder: "FILE", "A file of delivery policies, one spec per line (# comments).",
        reloadable: true)

    // MARK: The bundled simulators

    static let simulatorUnregistered = Setting.list(
        "sim-unregistered", placeholder: "TOKEN[:ms]", "Bundled APNs simulator: answer 410 Unregistered for TOKEN."
    ) { raw, origin in
        let parts = raw.split(separator: ":", maxSplits: 1)
        guard !raw.isEmpty, parts.count == 1 || Int64(parts[1]) != nil else {
            throw ValidationError("\(origin): expected TOKEN[:timestamp-ms], got \"\(raw)\"")
        }
    }
    static let simulatorBadTokens = Setting.list(
        "sim-bad-token", placeholder: "TOKEN", "Bundled APNs simulator: answer 400 BadDeviceToken for TOKEN."
    ) { raw, origin in
        if raw.isEmpty { throw ValidationError("\(origin): expected a device token") }
    }
    static let fcmSimulatorUnregistered = Setting.list(
        "fcm-sim-unregistered", placeholder: "TOKEN", "Bundled FCM simulator: answer 404 UNREGISTERED for TOKEN.",
        check: fcmToken)
    static let fcmSimulatorOtherSender = Setting.list(
        "fcm-sim-other-sender", placeholder: "TOKEN", "Bundled FCM simulator: answer 403 SENDER_ID_MISMATCH for TOKEN.",
        check: fcmToken)
    static let fcmSimulatorFaults = Setting.list(
        "fcm-sim-fault", placeholder: "KIND[:COUNT]",
        "Bundled FCM simulator: answer the next requests with a fault, as `herald fcm-sim --fault` (in order)."
    ) { raw, origin in
        do { _ = try FCMSimCommand.parseFault(raw) } catch { throw ValidationError("\(origin): \(error)") }
    }

    private static func fcmToken(_ raw: String, _ origin: String) throws {
        if Validator.deviceTokenProblem(raw, platform: .android) != nil {
            throw ValidationError("\(origin): expected an FCM registration token (letters, digits, ':', '-', '_'), got \"\(raw)\"")
        }
    }

    // MARK: Logs and the admin listener

    static let logLevel = Setting.text(
        "log-level", placeholder: "level", default: "info",
        "trace, debug, info, notice, warning, error or critical."
    ) { Logger.Level(rawValue: $0) != nil ? nil : "unknown level \"\($0)\" (trace, debug, info, notice, warning, error or critical)" }
    static let logFormat = Setting.choice(
        "log-format", LogFormat.allCases.map(\.rawValue), default: base.logFormat.rawValue,
        "text or json; both with UTC millisecond timestamps.", problem: "must be text or json")
    static let accessLog = Setting.text(
        "access-log", placeholder: "FILE",
        "Append one line per RPC (method, code, duration, peer, bundle; never tokens or content) to this file; without it they are logged at debug level.")
    static let adminPort = Setting.integer(
        "admin-port", default: -1, defaultText: "off",
        "Serve /metrics, /healthz and /readyz over HTTP/1.1 on this port (0 picks one); -1: off."
    ) { (-1...65535).contains($0) ? nil : "must be 0...65535 (-1: off), got \($0)" }
    static let adminHost = Setting.text(
        "admin-host", placeholder: "address", default: admin.host, "Address of the admin listener.",
        check: SettingRules.notEmpty)
    static let adminTimeout = Setting.number(
        "admin-timeout", default: admin.requestTimeout.timeInterval,
        "Seconds an admin connection has to send a whole request; then it is closed."
    ) { $0 > 0 && $0 <= 3600 ? nil : "must be more than 0 and at most 3600, got \($0)" }
    static let adminMaxConnectionsPerPeer = Setting.integer(
        "admin-max-connections-per-peer", default: admin.maxConnectionsPerPeer,
        "Most admin connections one peer address may hold open (of \(admin.maxConnections)); more are closed on accept.",
        check: SettingRules.range(1...admin.maxConnections, " (the admin listener's \(admin.maxConnections) slots)"))

    // MARK: Connections and calls

    static let eventLoops = Setting.integer(
        "event-loops", default: 0, defaultText: "0 (one per usable CPU)",
        "Event loops serving connections; 0: one per CPU the process may use (the fewest of CPUs online, the CPU affinity and the cgroup CPU quota, rounded up). Logged at start and shown in Status.",
        check: SettingRules.range(0...1024))
    static let computeThreads = Setting.integer(
        "compute-threads", default: 0, defaultText: "0 (usable CPUs - 1, at least 1)",
        "Threads running large compute calls (Render of big payloads), below the loops' priority; 0: one less than the usable CPUs, at least 1.",
        check: SettingRules.range(0...1024))
    static let maxConcurrentStreams = Setting.integer(
        "max-concurrent-streams", default: base.grpc.maxConcurrentStreams,
        "SETTINGS_MAX_CONCURRENT_STREAMS advertised per connection.", check: SettingRules.atLeastOne)
    static let drainSeconds = Setting.integer(
        "drain-seconds", default: Int(base.drainTimeout.components.seconds),
        "Bound on waiting for in-flight RPCs at shutdown.", check: SettingRules.notNegative)
    static let maxConnections = Setting.integer(
        "max-connections", default: base.grpc.maxConnections,
        "Most client connections open at once; more are closed on accept (lowered to fit the descriptor limit).",
        check: SettingRules.atLeastOne)
    static let maxConnectionsPerPeer = Setting.integer(
        "max-connections-per-peer", default: base.grpc.maxConnectionsPerPeer,
        "Most connections open at once from one peer address (IPv6: one /64; loopback included); 0: no cap."
    ) { $0 >= 0 ? nil : "must not be negative (0: no cap), got \($0)" }
    static let unauthenticatedMaxMessageBytes = Setting.integer(
        "unauthenticated-max-message-bytes", default: base.grpc.unauthenticatedMaxReceiveMessageBytes,
        "Largest request message of the methods callable without a token (Health, reflection, Status).",
        check: SettingRules.range(1...(4 << 20), " (the message limit)"))
    static let unauthenticatedBufferKiB = Setting.integer(
        "unauthenticated-buffer-kib", default: base.grpc.unauthenticatedMaxBufferedBytes >> 10,
        "Request bytes (KiB) all calls of those methods together may hold (apart from --max-buffered-request-mib).",
        check: SettingRules.range(1...(1 << 20)))
    static let unauthenticatedStreamsPerConnection = Setting.integer(
        "unauthenticated-streams-per-connection", default: base.grpc.unauthenticatedMaxStreamsPerConnection,
        "Streaming calls of those methods (Health/Watch, reflection) open at once per connection.",
        check: SettingRules.atLeastOne)
    static let unauthenticatedStreams = Setting.integer(
        "unauthenticated-streams", default: base.grpc.unauthenticatedMaxStreams,
        "The same bound for the whole server.", check: SettingRules.atLeastOne)
    static let unauthenticatedStreamMaxAge = Setting.seconds(
        "unauthenticated-stream-max-age", default: base.grpc.unauthenticatedMaxStreamAge.timeInterval,
        "Seconds after which such a streaming call is ended with UNAVAILABLE (the client calls again).")
    static let maxBufferedRequestMiB = Setting.integer(
        "max-buffered-request-mib", default: base.grpc.maxBufferedBytes >> 20,
        "Request bytes (MiB) all connections together may hold for calls still arriving or running.",
        check: SettingRules.atLeastOne)
    static let maxConnectionBufferMiB = Setting.integer(
        "max-connection-buffer-mib", default: base.grpc.maxBufferedBytesPerConnection >> 20,
        "The same bound (MiB) per connection.", check: SettingRules.atLeastOne)
    static let handshakeTimeout = Setting.seconds(
        "handshake-timeout", default: base.grpc.handshakeTimeout.timeInterval,
        "Seconds a new connection has to send the HTTP/2 preface and SETTINGS.")
    static let idleTimeout = Setting.seconds(
        "idle-timeout", default: base.grpc.idleTimeout.timeInterval, "Seconds without an open call before a connection gets GOAWAY.")
    static let keepaliveInterval = Setting.seconds(
        "keepalive-interval", default: base.grpc.keepaliveInterval.timeInterval, "Seconds of silence from a peer before Herald PINGs it.")
    static let keepaliveTimeout = Setting.seconds(
        "keepalive-timeout", default: base.grpc.keepaliveTimeout.timeInterval, "Seconds to wait for anything after that PING before closing.")
    static let requestReceiveTimeout = Setting.seconds(
        "request-receive-timeout", default: base.grpc.requestReceiveTimeout.timeInterval,
        "Seconds a call's request (headers to end of body) may take to arrive.")

    // MARK: Routes and retention

    static let apnsResponseTimeout = Setting.integer(
        "apns-response-timeout", default: Int(base.apnsResponseTimeout.components.seconds),
        "Seconds to wait for APNs to answer a request before resetting the stream and retrying it.",
        check: SettingRules.range(1...3600))
    static let routeInFlight = Setting.integer(
        "route-in-flight", default: base.routeLimits.inFlight,
        "Messages sending at once per APNs route (credentials + endpoint).", check: SettingRules.atLeastOne)
    static let routeQueue = Setting.integer(
        "route-queue", default: base.routeLimits.queue,
        "Messages waiting per APNs route beyond --route-in-flight; more are deferred until it has room.",
        check: SettingRules.range(
            0...256, " (each waiting message holds one of the \(base.maxDispatchesInFlight) global dispatch slots)"))
    static let retentionDays = Setting.integer(
        "retention-days", default: Int(base.retention.periodMilliseconds / 86_400_000),
        "Days a finished message (and its idempotency key) is kept after its last state change; then it is deleted.",
        check: SettingRules.range(1...36_500))

    // MARK: TLS

    static let tlsCert = Setting.text(
        "tls-cert", placeholder: "FILE",
        "Serve gRPC over TLS (ALPN h2, TLS 1.2+) with this PEM certificate, leaf first then its chain.", reloadable: true)
    static let tlsKey = Setting.text(
        "tls-key", placeholder: "FILE", "The PEM private key of --tls-cert; refused when group or others may read it.",
        reloadable: true)
    static let tlsClientCA = Setting.text(
        "tls-client-ca", placeholder: "FILE",
        "mTLS: require a client certificate issued by a CA in this PEM file.", reloadable: true)
    static let allowPlaintext = Setting.switch(
        "allow-plaintext",
        "Serve h2c (no TLS) on a non-loopback --host, e.g. behind a mesh sidecar that terminates TLS.")
    static let adminTLS = Setting.switch(
        "admin-tls", "Serve the admin listener over TLS with --tls-cert/--tls-key.")
}

