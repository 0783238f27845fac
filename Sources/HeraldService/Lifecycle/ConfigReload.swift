import APNs
public import APNsProvider
import FCM
public import FCMProvider
import Logging
import TLSTransport
import ServiceLifecycle
import UnixSignals

/// What SIGHUP re-reads: the tokens file, the APNs routes file and the FCM
/// routes file. Routes given as flags or config-file lines stay as they
/// were at start.
public struct ReloadSources: Sendable {
    public var tokensFile: String?
    /// Routes given as `--apns-route` or config-file lines (fixed).
    public var fixedRoutes: [APNsRouteSpec]
    public var routesFile: String?
    public var responseTimeout: Duration
    /// FCM routes given as `--fcm-route` or config-file lines (fixed).
    public var fixedFCMRoutes: [FCMRouteSpec] = []
    /// The FCM routes file SIGHUP re-reads.
    public var fcmRoutesFile: String?
    public var fcmRatePerMinute = HeraldConfiguration.defaultFCMRatePerMinute

    public init(tokensFile: String?, fixedRoutes: [APNsRouteSpec], routesFile: String?, responseTimeout: Duration) {
        self.tokensFile = tokensFile
        self.fixedRoutes = fixedRoutes
        self.routesFile = routesFile
        self.responseTimeout = responseTimeout
    }
}

/// Re-reads the tokens file and the routes file and applies both at once,
/// or, when either is unreadable or invalid, neither (the error is logged
/// and the configuration in force stays).
struct ConfigReloader: Sendable {
    let sources: ReloadSources
    let policy: AccessPolicy
    let gateway: ProviderGateways
    let logger: Logger
    /// The gRPC (and admin) listener's TLS files, re-read on their own: a
    /// bad certificate leaves the one in force and the rest still reloads.
    var tls: ServerTLS? = nil

    fileprivate struct ReloadError: Error, CustomStringConvertible {
        var description: String
    }

    /// The clients no route uses any more (to retire once idle).
    struct Retired {
        var apns: [APNsClient] = []
        var fcm: [FCMClient] = []
    }

    /// Re-reads the TLS certificate, key and client CA: later connections
    /// use them, open ones keep theirs; when they are bad the ones in force stay.
    func reloadTLS() {
        guard let tls else { return }
        do {
            let summary = try tls.reload()
            logger.notice("TLS certificate reloaded", metadata: [
                "serial": "\(summary.serial)", "subject": "\(summary.subject)", "not_after": "\(summary.notAfter)",
            ])
        } catch {
            logger.error("TLS reload failed; the certificate in force stays", metadata: ["error": "\(error)"])
        }
    }

    /// Returns the clients no route uses any more (to retire once idle).
    func reload() -> Retired {
        let grants: [AccessPolicy.Grant]?
        let routes: [APNsGateway.Route]?
        let fcmRoutes: [FCMGateway.Route]?
        do {
            grants = try sources.tokensFile.map { try AccessPolicy.load(path: $0).grants }
            routes = try loadRoutes()
            fcmRoutes = try loadFCMRoutes()
        } catch {
            logger.error("reload failed; the configuration in force stays", metadata: ["error": "\(error)"])
            return Retired()
        }
        var metadata: Logger.Metadata = [:]
        if let grants {
            let changes = AccessPolicy.changes(from: policy.grants, to: grants)
            policy.replaceGrants(grants)
            metadata["tokens_added"] = "\(Self.names(changes.added))"
            metadata["tokens_removed"] = "\(Self.names(changes.removed))"
            metadata["tokens_changed"] = "\(Self.names(changes.changed))"
        }
        var retired = Retired()
        if let fcmRoutes {
            let before = gateway.fcm.routes
            let old = Dictionary(before.map { ($0.name, $0.identity) }, uniquingKeysWith: { first, _ in first })
            let new = Dictionary(fcmRoutes.map { ($0.name, $0.identity) }, uniquingKeysWith: { first, _ in first })
            retired.fcm = gateway.fcm.replaceRoutes(fcmRoutes)
            metadata["fcm_routes_added"] = "\(Self.names(new.keys.filter { old[$0] == nil }))"
            metadata["fcm_routes_removed"] = "\(Self.names(old.keys.filter { new[$0] == nil }))"
            metadata["fcm_routes_changed"] = "\(Self.names(new.filter { old[$0.key] != nil && old[$0.key] != $0.value }.map(\.key)))"
            metadata["fcm_pools_retired"] = "\(retired.fcm.count)"
        }
        if let routes {
            let before = gateway.apns.routes
            let old = Dictionary(before.map { ($0.name, $0.identity) }, uniquingKeysWith: { first, _ in first })
            let new = Dictionary(routes.map { ($0.name, $0.identity) }, uniquingKeysWith: { first, _ in first })
            retired.apns = gateway.apns.replaceRoutes(routes)
            metadata["routes_added"] = "\(Self.names(new.keys.filter { old[$0] == nil }))"
            metadata["routes_removed"] = "\(Self.names(old.keys.filter { new[$0] == nil }))"
            metadata["routes_changed"] = "\(Self.names(new.filter { old[$0.key] != nil && old[$0.key] != $0.value }.map(\.key)))"
            metadata["pools_retired"] = "\(retired.apns.count)"
        }
        logger.notice("configuration reloaded", metadata: metadata)
        return retired
    }

    /// Labels or route names for a log line: sorted, `;`-separated, `none`.
    private static func names(_ names: [String]) -> String {
        names.isEmpty ? "none" : names.sorted().joined(separator: ";")
    }

    /// The new routes; nil: leave them (no routes file, or still none and
    /// the bundled simulator serving).
    private func loadRoutes() throws -> [APNsGateway.Route]? {
        guard let path = sources.routesFile else { return nil }
        let specs = sources.fixedRoutes + (try APNsRouteSpec.parseFile(path: path))
        if specs.isEmpty {
            guard gateway.apns.routes.allSatisfy(\.identity.isEmpty) else {
                throw ReloadError(description: "APNs routes file \(path) has no routes")
            }
            return nil
        }
        return try APNsRouteSpec.makeRoutes(specs, responseTimeout: sources.responseTimeout, reusing: gateway.apns.routes)
    }
}

extension ConfigReloader {
    /// The new FCM routes; nil: leave them (no FCM routes file, or still
    /// none and the bundled FCM simulator serving).
    fileprivate func loadFCMRoutes() throws -> [FCMGateway.Route]? {
        guard let path = sources.fcmRoutesFile else { return nil }
        let specs = sources.fixedFCMRoutes + (try FCMRouteSpec.parseFile(path: path))
        if specs.isEmpty {
            guard gateway.fcm.simulator != nil else {
                throw ReloadError(description: "FCM routes file \(path) has no routes")
            }
            return nil
        }
        if gateway.fcm.simulator != nil {
            throw ReloadError(description: "FCM routes file \(path) now has routes; Herald started on the bundled FCM simulator: restart to use them")
        }
        return try FCMRouteSpec.makeRoutes(
            specs, ratePerMinute: sources.fcmRatePerMinute, reusing: gateway.fcm.routes, logger: logger)
    }
}

/// Reloads on SIGHUP until its turn in a graceful shutdown; the clients a
/// reload replaced are shut down here once their sends in flight are done.
struct ReloadService: Service {
    let reloader: ConfigReloader

    func run() async {
        let reloader = reloader
        await withDiscardingTaskGroup { retirements in
            for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
                reloader.logger.info("SIGHUP: reloading the tokens file, APNs and FCM routes")
                reloader.reloadTLS()
                let retired = reloader.reload()
                for client in retired.apns {
                    retirements.addTask { await reloader.gateway.apns.retireWhenIdle(client) }
                }
                for client in retired.fcm {
                    retirements.addTask { await reloader.gateway.fcm.retireWhenIdle(client) }
                }
            }
        }
    }
}
