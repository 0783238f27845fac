public import APNsProvider
public import FCMProvider
import HeraldCore
import Logging
import PushProviders
import TLSTransport
import ServiceLifecycle
import UnixSignals

/// What SIGHUP re-reads: the tokens file, the APNs routes file, the FCM
/// routes file and the delivery policies file. Routes and policies given
/// as flags or config-file lines stay as they were at start.
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
    /// The delivery policies (fixed specs and the file SIGHUP re-reads);
    /// nil: none configured, nothing to re-read.
    public var deliveryPolicies: DeliveryPolicySources?

    public init(tokensFile: String?, fixedRoutes: [APNsRouteSpec], routesFile: String?, responseTimeout: Duration) {
        self.tokensFile = tokensFile
        self.fixedRoutes = fixedRoutes
        self.routesFile = routesFile
        self.responseTimeout = responseTimeout
    }
}

/// Re-reads the tokens file and every provider's routes and applies them
/// all at once, or, when any is unreadable or invalid, none (the error is
/// logged and the configuration in force stays). Providers are reached only
/// through ``RouteReloading`` (``ProviderGateways/routeReloads(_:logger:)``).
struct ConfigReloader: Sendable {
    let sources: ReloadSources
    let policy: AccessPolicy
    /// Every provider's routes, re-read in this order.
    let routes: [any RouteReloading]
    let logger: Logger
    /// The gRPC (and admin) listener's TLS files, re-read on their own: a
    /// bad certificate leaves the one in force and the rest still reloads.
    var tls: ServerTLS? = nil
    /// The delivery policies in force, swapped whole when
    /// `sources.deliveryPolicies` re-reads cleanly.
    var deliveryPolicies: DeliveryPolicyHolder? = nil

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

    /// Returns, per client no route uses any more, its retirement (waits
    /// for its sends in flight, then shuts it down).
    func reload() -> [@Sendable () async -> Void] {
        let grants: [AccessPolicy.Grant]?
        let prepared: [PreparedRouteReload]
        let policies: PolicySet?
        do {
            grants = try sources.tokensFile.map { try AccessPolicy.load(path: $0).grants }
            policies = deliveryPolicies == nil ? nil : try sources.deliveryPolicies?.load()
            prepared = try routes.compactMap { try $0.prepareReload() }
        } catch {
            logger.error("reload failed; the configuration in force stays", metadata: ["error": "\(error)"])
            return []
        }
        var metadata: Logger.Metadata = [:]
        if let grants {
            let changes = AccessPolicy.changes(from: policy.grants, to: grants)
            policy.replaceGrants(grants)
            metadata["tokens_added"] = "\(Self.names(changes.added))"
            metadata["tokens_removed"] = "\(Self.names(changes.removed))"
            metadata["tokens_changed"] = "\(Self.names(changes.changed))"
        }
        if let policies, let deliveryPolicies {
            let changes = deliveryPolicies.replace(with: policies)
            metadata["policies_added"] = "\(Self.names(changes.added))"
            metadata["policies_removed"] = "\(Self.names(changes.removed))"
            metadata["policies_changed"] = "\(Self.names(changes.changed))"
        }
        var retirements: [@Sendable () async -> Void] = []
        for reload in prepared {
            let applied = reload.apply()
            for (key, value) in applied.metadata { metadata[key] = .string(value) }
            retirements += applied.retirements
        }
        logger.notice("configuration reloaded", metadata: metadata)
        return retirements
    }

    /// Labels for a log line: sorted, `;`-separated, `none`.
    private static func names(_ names: [String]) -> String {
        names.isEmpty ? "none" : names.sorted().joined(separator: ";")
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
                reloader.logger.info("SIGHUP: reloading the tokens file, APNs and FCM routes, delivery policies")
                reloader.reloadTLS()
                for retire in reloader.reload() {
                    retirements.addTask { await retire() }
                }
            }
        }
    }
}
