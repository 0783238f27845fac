import APNsProvider
import ArgumentParser
import FCMProvider
import HeraldCore
import HeraldService
import Logging

/// The checks of `serve`'s settings. Each runs on the value in use (a flag,
/// or the layer it fell back to) and on every value the environment and the
/// config file give, overridden ones included: a typo anywhere stops
/// start-up with an error naming where the value came from (`--port`,
/// `HERALD_PORT`, `herald.conf:3: port`), never a silent default.
extension ServeCommand {
    func validate() throws {
        if let problem = Settings.problem { throw ValidationError(problem) }
        try check("host", host, Self.notEmpty)
        try check("port", port) { (0...65535).contains($0) ? nil : "must be 0...65535, got \($0)" }
        try check("data-dir", dataDirectory, Self.notEmpty)
        try check("store", store) { value in
            do { _ = try StoreLocation.parse(value.isEmpty ? "sqlite:-" : value, replicaID: "check"); return nil } catch {
                return String(describing: error)
            }
        }
        try check("replica-id", replicaID) { $0.count <= 200 ? nil : "must be at most 200 characters" }
        try check("lease-seconds", leaseSeconds) { (3...3600).contains($0) ? nil : "must be 3...3600, got \($0)" }
        try check("max-concurrent-reads", maxConcurrentReads) { (1...256).contains($0) ? nil : "must be 1...256, got \($0)" }
        try check("max-queued-reads", maxQueuedReads) { (0...100_000).contains($0) ? nil : "must be 0...100000, got \($0)" }
        try check("read-timeout", readTimeout) { $0 >= 0.01 && $0 <= 3600 ? nil : "must be 0.01...3600 seconds, got \($0)" }
        try check("durability", durability) { ["full", "process"].contains($0) ? nil : "must be full or process, got \"\($0)\"" }
        try check("tokens-file", tokensFile) { _ in nil }
        try check("grace-seconds", graceSeconds) { (0...3600).contains($0) ? nil : "must be 0...3600, got \($0)" }
        try check("context-aware-share", contextAwareShare) { (0...1).contains($0) ? nil : "must be between 0 and 1, got \($0)" }
        try check("sim-record", simulatorRecord) { _ in nil }
        try check("apns-routes-file", apnsRoutesFile) { _ in nil }
        try check("log-level", logLevel) {
            Logger.Level(rawValue: $0) != nil ? nil : "unknown level \"\($0)\" (trace, debug, info, notice, warning, error or critical)"
        }
        try check("log-format", logFormat) { LogFormat(rawValue: $0) != nil ? nil : "must be text or json, got \"\($0)\"" }
        try check("access-log", accessLog) { _ in nil }
        try check("admin-port", adminPort) { (-1...65535).contains($0) ? nil : "must be 0...65535 (-1: off), got \($0)" }
        try check("admin-host", adminHost, Self.notEmpty)
        try check("admin-timeout", adminTimeout) { $0 > 0 && $0 <= 3600 ? nil : "must be more than 0 and at most 3600, got \($0)" }
        try check("admin-max-connections-per-peer", adminMaxConnectionsPerPeer) { (1...32).contains($0) ? nil : "must be 1...32 (the admin listener's 32 slots), got \($0)" }
        try check("max-concurrent-streams", maxConcurrentStreams, Self.atLeastOne)
        try check("drain-seconds", drainSeconds) { $0 >= 0 ? nil : "must not be negative, got \($0)" }
        try check("max-connections", maxConnections, Self.atLeastOne)
        try check("max-buffered-request-mib", maxBufferedRequestMiB, Self.atLeastOne)
        try check("max-connection-buffer-mib", maxConnectionBufferMiB, Self.atLeastOne)
        try check("max-connections-per-peer", maxConnectionsPerPeer) { $0 >= 0 ? nil : "must not be negative (0: no cap), got \($0)" }
        try check("unauthenticated-max-message-bytes", unauthenticatedMaxMessageBytes) {
            (1...(4 << 20)).contains($0) ? nil : "must be 1...4194304 (the message limit), got \($0)"
        }
        try check("unauthenticated-buffer-kib", unauthenticatedBufferKiB) {
            (1...(1 << 20)).contains($0) ? nil : "must be 1...1048576, got \($0)"
        }
        try check("unauthenticated-streams-per-connection", unauthenticatedStreamsPerConnection, Self.atLeastOne)
        try check("unauthenticated-streams", unauthenticatedStreams, Self.atLeastOne)
        for (key, seconds) in [
            ("handshake-timeout", handshakeTimeout), ("idle-timeout", idleTimeout),
            ("keepalive-interval", keepaliveInterval), ("keepalive-timeout", keepaliveTimeout),
            ("request-receive-timeout", requestReceiveTimeout),
            ("unauthenticated-stream-max-age", unauthenticatedStreamMaxAge),
        ] {
            try check(key, seconds) { $0 > 0 && $0 <= 86_400 ? nil : "must be more than 0 and at most 86400 seconds, got \($0)" }
        }
        try check("apns-response-timeout", apnsResponseTimeout) { (1...3600).contains($0) ? nil : "must be 1...3600, got \($0)" }
        try check("route-in-flight", routeInFlight, Self.atLeastOne)
        try check("route-queue", routeQueue) {
            (0...256).contains($0) ? nil : "must be 0...256 (each waiting message holds one of the 512 global dispatch slots), got \($0)"
        }
        try check("retention-days", retentionDays) { (1...36_500).contains($0) ? nil : "must be 1...36500, got \($0)" }
        if let retentionSeconds, retentionSeconds < 1 { throw ValidationError("--retention-seconds: must be at least 1, got \(retentionSeconds)") }
        for key in ["allow-plaintext", "admin-tls"] {
            for candidate in Settings.candidates(key) where Settings.parseBool(candidate.value) == nil {
                throw ValidationError("\(candidate.origin): must be true or false, got \"\(candidate.value)\"")
            }
        }
        if tlsCert.isEmpty != tlsKey.isEmpty {
            throw ValidationError(tlsCert.isEmpty ? "\(Settings.origin("tls-key")) needs --tls-cert" : "\(Settings.origin("tls-cert")) needs --tls-key")
        }
        if !tlsClientCA.isEmpty && tlsCert.isEmpty {
            throw ValidationError("\(Settings.origin("tls-client-ca")) needs --tls-cert and --tls-key")
        }
        if adminTLS && tlsCert.isEmpty {
            throw ValidationError("--admin-tls needs --tls-cert and --tls-key (the admin listener uses the same certificate)")
        }
        for entry in allListed("sim-unregistered", simulatorUnregistered) {
            let parts = entry.value.split(separator: ":", maxSplits: 1)
            guard !entry.value.isEmpty, parts.count == 1 || Int64(parts[1]) != nil else {
                throw ValidationError("\(entry.origin): expected TOKEN[:timestamp-ms], got \"\(entry.value)\"")
            }
        }
        for entry in allListed("sim-bad-token", simulatorBadTokens) where entry.value.isEmpty {
            throw ValidationError("\(entry.origin): expected a device token")
        }
        for entry in allListed("apns-route", apnsRoutes) { _ = try APNsRouteSpec.parse(entry.value, source: entry.origin) }
        try check("fcm-routes-file", fcmRoutesFile) { _ in nil }
        try check("fcm-rate-per-minute", fcmRatePerMinute) {
            (1...100_000_000).contains($0) ? nil : "must be 1...100000000 messages per minute, got \($0)"
        }
        for entry in allListed("fcm-route", fcmRoutes) { _ = try FCMRouteSpec.parse(entry.value, source: entry.origin) }
        for key in ["fcm-sim-unregistered", "fcm-sim-other-sender"] {
            let values = key == "fcm-sim-unregistered" ? fcmSimulatorUnregistered : fcmSimulatorOtherSender
            for entry in allListed(key, values) where Validator.deviceTokenProblem(entry.value, platform: .android) != nil {
                throw ValidationError("\(entry.origin): expected an FCM registration token (letters, digits, ':', '-', '_'), got \"\(entry.value)\"")
            }
        }
        for entry in allListed("fcm-sim-fault", fcmSimulatorFaults) {
            do { _ = try FCMSimCommand.parseFault(entry.value) } catch {
                throw ValidationError("\(entry.origin): \(error)")
            }
        }
    }

    /// The FCM routes given as `--fcm-route` flags, or else as config-file
    /// lines, parsed (each error names its flag or line).
    func fixedFCMRouteSpecs() throws -> [FCMRouteSpec] {
        try listed("fcm-route", fcmRoutes).map { try FCMRouteSpec.parse($0.value, source: $0.origin) }
    }

    /// The routes given as `--apns-route` flags, or else as config-file
    /// lines, parsed (each error names its flag or line).
    func fixedRouteSpecs() throws -> [APNsRouteSpec] {
        try listed("apns-route", apnsRoutes).map { try APNsRouteSpec.parse($0.value, source: $0.origin) }
    }

    /// A repeatable setting's values in use with their origins: the flags
    /// when any is given (`--key #n`), else the config file's lines.
    private func listed(_ key: String, _ values: [String]) -> [Settings.Candidate] {
        guard Settings.origin(key) == "--\(key)" else { return Settings.fileList(key) }
        return values.enumerated().map { Settings.Candidate(origin: "--\(key) #\($0 + 1)", value: $1) }
    }

    /// As `listed`, plus the config file's lines the flags override (checked too).
    private func allListed(_ key: String, _ values: [String]) -> [Settings.Candidate] {
        let inUse = listed(key, values)
        return Settings.origin(key) == "--\(key)" ? Settings.fileList(key) + inUse : inUse
    }

    /// Runs `rule` on every environment and config-file value of `key`
    /// (parsed as the flag is) and on the value in use.
    private func check<T: LosslessStringConvertible>(_ key: String, _ value: T, _ rule: (T) -> String?) throws {
        for candidate in Settings.candidates(key) {
            guard let parsed = T(candidate.value) else {
                let kind = T.self == Int.self ? "an integer" : T.self == Double.self ? "a number" : "a value"
                throw ValidationError("\(candidate.origin): must be \(kind), got \"\(candidate.value)\"")
            }
            if let problem = rule(parsed) { throw ValidationError("\(candidate.origin): \(problem)") }
        }
        if let problem = rule(value) { throw ValidationError("\(Settings.origin(key)): \(problem)") }
    }

    private static func notEmpty(_ value: String) -> String? { value.isEmpty ? "must not be empty" : nil }

    private static func atLeastOne(_ value: Int) -> String? { value >= 1 ? nil : "must be at least 1, got \(value)" }
}
