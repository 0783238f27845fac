import APNsProvider
import ArgumentParser
import FCMProvider
import HeraldCore
import HeraldPrimitives
import HeraldService
import Logging
import TLSTransport

#if canImport(Glibc)
import Glibc
#endif

extension ServeCommand {
    /// The server's configuration from the validated settings, with the
    /// tokens file and the APNs routes read (key files included): what
    /// `--check-config` checks and `serve` starts with.
    func makeConfiguration(_ settings: SettingValues, logger: Logger) throws -> HeraldConfiguration {
        typealias S = ServeSettings
        var configuration = HeraldConfiguration()
        configuration.host = settings[S.host]
        configuration.port = settings[S.port]
        configuration.dataDirectory = Self.absolutePath(settings[S.dataDirectory])
        if !settings[S.store].isEmpty {
            let replica = settings[S.replicaID].isEmpty ? StoreLocation.defaultReplicaID() : settings[S.replicaID]
            switch try StoreLocation.parse(settings[S.store], replicaID: replica) {
            case .sqlite(let path): configuration.store = .sqlite(path: Self.absolutePath(path))
            case .postgres(var postgres):
                postgres.leaseMilliseconds = Int64(settings[S.leaseSeconds]) * 1000
                configuration.store = .postgres(postgres)
            }
        }
        configuration.readSide.maxConcurrent = settings[S.maxConcurrentReads]
        configuration.readSide.maxEventStreams = settings[S.maxEventStreams]
        configuration.readSide.maxQueued = settings[S.maxQueuedReads]
        configuration.readSide.timeout = .milliseconds(Int64(settings[S.readTimeout] * 1000))
        configuration.grpc.maxConcurrentStreams = settings[S.maxConcurrentStreams]
        if settings[S.eventLoops] > 0 { configuration.grpc.eventLoopThreads = settings[S.eventLoops] }
        if settings[S.computeThreads] > 0 { configuration.grpc.computeThreads = settings[S.computeThreads] }
        configuration.grpc.maxConnections = settings[S.maxConnections]
        configuration.grpc.maxBufferedBytes = settings[S.maxBufferedRequestMiB] << 20
        configuration.grpc.maxBufferedBytesPerConnection = settings[S.maxConnectionBufferMiB] << 20
        configuration.grpc.maxConnectionsPerPeer = settings[S.maxConnectionsPerPeer]
        configuration.grpc.unauthenticatedMaxReceiveMessageBytes = settings[S.unauthenticatedMaxMessageBytes]
        configuration.grpc.unauthenticatedMaxBufferedBytes = settings[S.unauthenticatedBufferKiB] << 10
        configuration.grpc.unauthenticatedMaxStreamsPerConnection = settings[S.unauthenticatedStreamsPerConnection]
        configuration.grpc.unauthenticatedMaxStreams = settings[S.unauthenticatedStreams]
        configuration.grpc.unauthenticatedMaxStreamAge = .milliseconds(Int64(settings[S.unauthenticatedStreamMaxAge] * 1000))
        configuration.grpc.handshakeTimeout = .milliseconds(Int64(settings[S.handshakeTimeout] * 1000))
        configuration.grpc.idleTimeout = .milliseconds(Int64(settings[S.idleTimeout] * 1000))
        configuration.grpc.keepaliveInterval = .milliseconds(Int64(settings[S.keepaliveInterval] * 1000))
        configuration.grpc.keepaliveTimeout = .milliseconds(Int64(settings[S.keepaliveTimeout] * 1000))
        configuration.grpc.requestReceiveTimeout = .milliseconds(Int64(settings[S.requestReceiveTimeout] * 1000))
        configuration.drainTimeout = .seconds(settings[S.drainSeconds])
        configuration.graceSeconds = Int64(settings[S.graceSeconds])
        configuration.durability = settings[S.durability] == "process" ? .processCrash : .sqliteFull
        configuration.contextAwareShare = settings[S.contextAwareShare]
        configuration.apnsResponseTimeout = .seconds(settings[S.apnsResponseTimeout])
        configuration.routeLimits = Dispatcher.RouteLimits(inFlight: settings[S.routeInFlight], queue: settings[S.routeQueue])
        configuration.retention.periodMilliseconds = retentionSeconds.map { Int64($0) * 1000 } ?? Int64(settings[S.retentionDays]) * 86_400_000
        configuration.simulatorRecordPath = settings.given(S.simulatorRecord)
        configuration.logFormat = LogFormat(rawValue: settings[S.logFormat]) ?? .text
        configuration.accessLogPath = settings.given(S.accessLog)
        if settings[S.adminPort] >= 0 {
            var admin = AdminConfiguration()
            admin.host = settings[S.adminHost]
            admin.port = settings[S.adminPort]
            admin.requestTimeout = .milliseconds(Int64(settings[S.adminTimeout] * 1000))
            admin.maxConnectionsPerPeer = settings[S.adminMaxConnectionsPerPeer]
            configuration.admin = admin
        }
        if !settings[S.tlsCert].isEmpty {
            // Each error names its file (unreadable, key readable by others,
            // expired, key and certificate not a pair).
            let tls = try ServerTLS(files: .init(
                certificate: settings[S.tlsCert], key: settings[S.tlsKey], clientCA: settings.given(S.tlsClientCA)))
            configuration.tls = tls
            if settings[S.adminTLS] { configuration.admin?.tls = tls }
            logger.info("TLS on the gRPC listener", metadata: [
                "certificate": "\(tls.summary)", "mtls": "\(!settings[S.tlsClientCA].isEmpty)", "admin_tls": "\(settings[S.adminTLS])",
            ])
        }
        for entry in settings[S.simulatorUnregistered] {
            let parts = entry.split(separator: ":", maxSplits: 1)
            let timestamp = parts.count == 2 ? Int64(parts[1]) : nil
            // Without a timestamp: "unregistered as of start", as `apns-sim` does.
            configuration.simulatorFaults.unregistered[String(parts[0]).lowercased()] = timestamp ?? Timestamp.nowMilliseconds()
        }
        for token in settings[S.simulatorBadTokens] { configuration.simulatorFaults.badTokens.insert(token.lowercased()) }

        let fixedRoutes = try fixedRouteSpecs(settings)
        var routeSpecs = fixedRoutes
        if !settings[S.apnsRoutesFile].isEmpty { routeSpecs += try APNsRouteSpec.parseFile(path: settings[S.apnsRoutesFile]) }
        if !routeSpecs.isEmpty {
            configuration.apnsRoutes = try APNsRouteSpec.makeRoutes(routeSpecs, responseTimeout: .seconds(settings[S.apnsResponseTimeout]))
            logger.info("APNs routes configured", metadata: ["routes": "\(routeSpecs.count)"])
        }
        let fixedFCMRoutes = try fixedFCMRouteSpecs(settings)
        var fcmSpecs = fixedFCMRoutes
        if !settings[S.fcmRoutesFile].isEmpty { fcmSpecs += try FCMRouteSpec.parseFile(path: settings[S.fcmRoutesFile]) }
        configuration.fcmRatePerMinute = settings[S.fcmRatePerMinute]
        if !fcmSpecs.isEmpty {
            // Reads and checks every service-account key: a bad one stops start-up naming its route.
            configuration.fcmRoutes = try FCMRouteSpec.makeRoutes(fcmSpecs, ratePerMinute: settings[S.fcmRatePerMinute], logger: logger)
            logger.info("FCM routes configured", metadata: ["routes": "\(fcmSpecs.count)"])
        }
        configuration.fcmSimulator.unregistered = settings[S.fcmSimulatorUnregistered]
        configuration.fcmSimulator.otherSender = settings[S.fcmSimulatorOtherSender]
        configuration.fcmSimulator.faults = try settings[S.fcmSimulatorFaults].map { try FCMSimCommand.parseFault($0) }.map { ($0.0, $0.1) }
        // Every spec and the file parsed, each zone checked: a bad one stops
        // start-up naming its source, line and key.
        let policySources = DeliveryPolicySources(specs: settings[S.deliveryPolicies], file: settings.given(S.deliveryPoliciesFile))
        if !policySources.isEmpty {
            let policies = try policySources.load()
            configuration.deliveryPolicies = DeliveryPolicyHolder(policies)
            logger.info("delivery policies configured", metadata: ["bundles": "\(policies.canonicalByBundle.count)"])
        }
        if !settings[S.tokensFile].isEmpty {
            configuration.accessPolicy = try AccessPolicy.load(path: settings[S.tokensFile])
            logger.info("access tokens loaded", metadata: ["labels": "\(configuration.accessPolicy.grants.map(\.label))"])
        }
        if let refusal = configuration.openAccessRefusal { throw ValidationError(refusal) }
        if configuration.tls == nil && !settings[S.allowPlaintext] && !isLoopbackHost(settings[S.host]) {
            throw ValidationError(
                "refusing to serve h2c (cleartext: tokens and messages readable on the network) on \(settings[S.host]): "
                + "give --tls-cert and --tls-key, or --allow-plaintext when a sidecar terminates TLS")
        }
        // What SIGHUP re-reads: the table's reloadable rows (and the TLS files, above).
        configuration.reload = ReloadSources(
            tokensFile: settings.given(S.tokensFile), fixedRoutes: fixedRoutes,
            routesFile: settings.given(S.apnsRoutesFile), responseTimeout: .seconds(settings[S.apnsResponseTimeout]))
        configuration.reload?.fixedFCMRoutes = fixedFCMRoutes
        configuration.reload?.fcmRoutesFile = settings.given(S.fcmRoutesFile)
        configuration.reload?.fcmRatePerMinute = settings[S.fcmRatePerMinute]
        configuration.reload?.deliveryPolicies = policySources.isEmpty ? nil : policySources
        return configuration
    }

    /// systemd's `StateDirectory=` (it sets `$STATE_DIRECTORY`) when Herald
    /// runs as a unit, else `./data`.
    static func defaultDataDirectory() -> String {
        guard let state = getenv("STATE_DIRECTORY").map({ String(cString: $0) }), !state.isEmpty else { return "./data" }
        return String(state.split(separator: ":").first ?? "./data")
    }

    /// `path` made absolute against the working directory at start, so the
    /// store's place never depends on where a later reader stands.
    static func absolutePath(_ path: String) -> String {
        guard !path.hasPrefix("/") else { return path }
        guard let pointer = getcwd(nil, 0) else { return path }
        defer { free(pointer) }
        let cwd = String(cString: pointer)
        let relative = path.hasPrefix("./") ? String(path.dropFirst(2)) : path
        return (cwd.hasSuffix("/") ? cwd : cwd + "/") + relative
    }
}
