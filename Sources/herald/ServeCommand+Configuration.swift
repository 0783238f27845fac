import APNsProvider
import ArgumentParser
import FCMProvider
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
    func makeConfiguration(logger: Logger) throws -> HeraldConfiguration {
        var configuration = HeraldConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.dataDirectory = Self.absolutePath(dataDirectory)
        if !store.isEmpty {
            let replica = replicaID.isEmpty ? StoreLocation.defaultReplicaID() : replicaID
            switch try StoreLocation.parse(store, replicaID: replica) {
            case .sqlite(let path): configuration.store = .sqlite(path: Self.absolutePath(path))
            case .postgres(var postgres):
                postgres.leaseMilliseconds = Int64(leaseSeconds) * 1000
                configuration.store = .postgres(postgres)
            }
        }
        configuration.readSide.maxConcurrent = maxConcurrentReads
        configuration.readSide.maxQueued = maxQueuedReads
        configuration.readSide.timeout = .milliseconds(Int64(readTimeout * 1000))
        configuration.grpc.maxConcurrentStreams = maxConcurrentStreams
        configuration.grpc.maxConnections = maxConnections
        configuration.grpc.maxBufferedBytes = maxBufferedRequestMiB << 20
        configuration.grpc.maxBufferedBytesPerConnection = maxConnectionBufferMiB << 20
        configuration.grpc.maxConnectionsPerPeer = maxConnectionsPerPeer
        configuration.grpc.unauthenticatedMaxReceiveMessageBytes = unauthenticatedMaxMessageBytes
        configuration.grpc.unauthenticatedMaxBufferedBytes = unauthenticatedBufferKiB << 10
        configuration.grpc.unauthenticatedMaxStreamsPerConnection = unauthenticatedStreamsPerConnection
        configuration.grpc.unauthenticatedMaxStreams = unauthenticatedStreams
        configuration.grpc.unauthenticatedMaxStreamAge = .milliseconds(Int64(unauthenticatedStreamMaxAge * 1000))
        configuration.grpc.handshakeTimeout = .milliseconds(Int64(handshakeTimeout * 1000))
        configuration.grpc.idleTimeout = .milliseconds(Int64(idleTimeout * 1000))
        configuration.grpc.keepaliveInterval = .milliseconds(Int64(keepaliveInterval * 1000))
        configuration.grpc.keepaliveTimeout = .milliseconds(Int64(keepaliveTimeout * 1000))
        configuration.grpc.requestReceiveTimeout = .milliseconds(Int64(requestReceiveTimeout * 1000))
        configuration.drainTimeout = .seconds(drainSeconds)
        configuration.graceSeconds = Int64(graceSeconds)
        configuration.durability = durability == "process" ? .processCrash : .sqliteFull
        configuration.contextAwareShare = contextAwareShare
        configuration.apnsResponseTimeout = .seconds(apnsResponseTimeout)
        configuration.routeLimits = Dispatcher.RouteLimits(inFlight: routeInFlight, queue: routeQueue)
        configuration.retention.periodMilliseconds = retentionSeconds.map { Int64($0) * 1000 } ?? Int64(retentionDays) * 86_400_000
        configuration.simulatorRecordPath = simulatorRecord.isEmpty ? nil : simulatorRecord
        configuration.logFormat = LogFormat(rawValue: logFormat) ?? .text
        configuration.accessLogPath = accessLog.isEmpty ? nil : accessLog
        if adminPort >= 0 {
            var admin = AdminConfiguration()
            admin.host = adminHost
            admin.port = adminPort
            admin.requestTimeout = .milliseconds(Int64(adminTimeout * 1000))
            admin.maxConnectionsPerPeer = adminMaxConnectionsPerPeer
            configuration.admin = admin
        }
        if !tlsCert.isEmpty {
            // Each error names its file (unreadable, key readable by others,
            // expired, key and certificate not a pair).
            let tls = try ServerTLS(files: .init(
                certificate: tlsCert, key: tlsKey, clientCA: tlsClientCA.isEmpty ? nil : tlsClientCA))
            configuration.tls = tls
            if adminTLS { configuration.admin?.tls = tls }
            logger.info("TLS on the gRPC listener", metadata: [
                "certificate": "\(tls.summary)", "mtls": "\(!tlsClientCA.isEmpty)", "admin_tls": "\(adminTLS)",
            ])
        }
        for entry in simulatorUnregistered {
            let parts = entry.split(separator: ":", maxSplits: 1)
            let timestamp = parts.count == 2 ? Int64(parts[1]) : nil
            // Without a timestamp: "unregistered as of start", as `apns-sim` does.
            configuration.simulatorFaults.unregistered[String(parts[0]).lowercased()] = timestamp ?? Timestamp.nowMilliseconds()
        }
        for token in simulatorBadTokens { configuration.simulatorFaults.badTokens.insert(token.lowercased()) }

        let fixedRoutes = try fixedRouteSpecs()
        var routeSpecs = fixedRoutes
        if !apnsRoutesFile.isEmpty { routeSpecs += try APNsRouteSpec.parseFile(path: apnsRoutesFile) }
        if !routeSpecs.isEmpty {
            configuration.apnsRoutes = try APNsRouteSpec.makeRoutes(routeSpecs, responseTimeout: .seconds(apnsResponseTimeout))
            logger.info("APNs routes configured", metadata: ["routes": "\(routeSpecs.count)"])
        }
        let fixedFCMRoutes = try fixedFCMRouteSpecs()
        var fcmSpecs = fixedFCMRoutes
        if !fcmRoutesFile.isEmpty { fcmSpecs += try FCMRouteSpec.parseFile(path: fcmRoutesFile) }
        configuration.fcmRatePerMinute = fcmRatePerMinute
        if !fcmSpecs.isEmpty {
            // Reads and checks every service-account key: a bad one stops start-up naming its route.
            configuration.fcmRoutes = try FCMRouteSpec.makeRoutes(fcmSpecs, ratePerMinute: fcmRatePerMinute, logger: logger)
            logger.info("FCM routes configured", metadata: ["routes": "\(fcmSpecs.count)"])
        }
        configuration.fcmSimulator.unregistered = fcmSimulatorUnregistered
        configuration.fcmSimulator.otherSender = fcmSimulatorOtherSender
        configuration.fcmSimulator.faults = try fcmSimulatorFaults.map { try FCMSimCommand.parseFault($0) }.map { ($0.0, $0.1) }
        if !tokensFile.isEmpty {
            configuration.accessPolicy = try AccessPolicy.load(path: tokensFile)
            logger.info("access tokens loaded", metadata: ["labels": "\(configuration.accessPolicy.grants.map(\.label))"])
        }
        if configuration.accessPolicy.isOpen && !isLoopbackHost(host) {
            throw ValidationError(
                "no access tokens are configured, so Herald serves on loopback only; "
                + "refusing to listen on \(host) (give --tokens-file, or use 127.0.0.1)")
        }
        if configuration.tls == nil && !allowPlaintext && !isLoopbackHost(host) {
            throw ValidationError(
                "refusing to serve h2c (cleartext: tokens and messages readable on the network) on \(host): "
                + "give --tls-cert and --tls-key, or --allow-plaintext when a sidecar terminates TLS")
        }
        configuration.reload = ReloadSources(
            tokensFile: tokensFile.isEmpty ? nil : tokensFile, fixedRoutes: fixedRoutes,
            routesFile: apnsRoutesFile.isEmpty ? nil : apnsRoutesFile, responseTimeout: .seconds(apnsResponseTimeout))
        configuration.reload?.fixedFCMRoutes = fixedFCMRoutes
        configuration.reload?.fcmRoutesFile = fcmRoutesFile.isEmpty ? nil : fcmRoutesFile
        configuration.reload?.fcmRatePerMinute = fcmRatePerMinute
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
