public import FCM
public import FCMSimulation
package import Logging
public import PushProviders
import Synchronization

/// Where Android pushes go: an FCM client per Firebase project (service
/// account and endpoint), chosen by bundle id (the Android package name).
///
/// With no FCM route, Herald starts the bundled FCM simulator in-process on
/// loopback (``embedded(ratePerMinute:recordTo:logger:)``) and delivers every
/// bundle's Android messages to it over real TLS with a real RS256-signed
/// service-account token.
public final class FCMGateway: Sendable {
    /// One configured FCM client and what it serves.
    public struct Route: Sendable {
        /// Android package names this route serves; `*` serves every bundle.
        public var bundleIDs: Set<String>
        /// The Firebase project messages are sent to (`/v1/projects/{id}/messages:send`).
        public var projectID: String
        public var client: FCMClient
        /// How logs and Status name it.
        public var name: String
        /// Endpoint `host:port` (Status).
        public var endpoint: String
        /// What makes two routes' clients interchangeable (project, key file
        /// contents, endpoint, token URL, CA, rate): a reload keeps the
        /// client of a route whose identity is unchanged. In memory only.
        package var identity = ""

        public init(bundleIDs: Set<String>, projectID: String, client: FCMClient, endpoint: String, name: String = "") {
            self.bundleIDs = bundleIDs
            self.projectID = projectID
            self.client = client
            self.endpoint = endpoint
            self.name = name.isEmpty ? "project=\(projectID) bundles=\(bundleIDs.sorted().joined(separator: ","))" : name
        }

        func serves(bundleID: String) -> Bool { bundleIDs.contains("*") || bundleIDs.contains(bundleID) }
    }

    /// The routes in force now; a reload (SIGHUP) swaps them at once.
    public var routes: [Route] { current.withLock { $0 } }
    let current: Mutex<[Route]>
    package let retirement = ClientRetirement<FCMClient>()
    /// The in-process simulator, when no FCM route is configured.
    public let simulator: FCMSimulator?
    /// Errors and auth refusals per pool (Status).
    let errors = ProviderErrorBook()
    private let observation = Mutex<(metrics: any DeliveryMetrics, logger: Logger)?>(nil)

    public init(routes: [Route], simulator: FCMSimulator? = nil) {
        current = Mutex(routes)
        self.simulator = simulator
    }

    /// The route for a bundle (specific routes win over `*`); nil when none.
    public func route(bundleID: String) -> Route? {
        let matching = routes.filter { $0.serves(bundleID: bundleID) }
        return matching.first { $0.bundleIDs.contains(bundleID) } ?? matching.first
    }

    /// Whether some route could deliver to `bundleID` (Schedule's coverage).
    public func serves(bundleID: String) -> Bool { routes.contains { $0.serves(bundleID: bundleID) } }

    /// Each client once, with the first route naming it.
    private var pools: [Route] {
        var seen: Set<ObjectIdentifier> = []
        return routes.filter { seen.insert(ObjectIdentifier($0.client)).inserted }
    }

    public func poolReports() async -> [ProviderPoolReport] {
        var reports: [ProviderPoolReport] = []
        let all = routes
        for route in pools {
            let bundles = all.filter { $0.client === route.client }.reduce(into: Set<String>()) { $0.formUnion($1.bundleIDs) }
            let status = await route.client.status()
            let errors = errors.entry(ObjectIdentifier(route.client))
            reports.append(ProviderPoolReport(
                platform: .android, service: "fcm", route: route.name, endpoint: route.endpoint, account: route.projectID,
                connectionsOpen: status.connectionsOpen, streamsInFlight: status.streamsInFlight,
                lastError: errors.lastError ?? status.lastError, lastErrorAt: errors.lastErrorAt, authFailures: errors.authFailures,
                credentialsMinted: status.accessTokensMinted, bundleIDs: bundles))
        }
        return reports
    }

    private func routeName(_ client: FCMClient) -> String {
        routes.first { $0.client === client }?.name ?? "FCM"
    }

    package func observe(metrics: any DeliveryMetrics, logger: Logger) {
        observation.withLock { $0 = (metrics, logger) }
    }

    /// Sends through `client`, timing the request and keeping its pool's
    /// error book and the delivery counters (labels: outcome only, never a
    /// token).
    public func send(_ request: FCMRequest, with client: FCMClient) async throws -> FCMResponse {
        try await errors.observedSend(
            through: client, retirement: retirement, route: { routeName(client) }, service: ("fcm", "FCM"),
            observation: observation.withLock { $0 }, { try await client.send(request) },
            answered: { response in
                let auth = FCMRefusal.authCodes.contains(response.errorCode ?? .unspecified) ? response.errorCode : nil
                return ProviderSendVerdict(
                    outcome: response.isSuccess ? "accepted" : FCMRefusal(response).kind.rawValue,
                    booked: response.isSuccess || auth != nil || response.status >= 500 || response.status == 429,
                    error: response.isSuccess ? nil : "HTTP \(response.status) \(response.errorCode?.rawValue ?? "")",
                    authReason: auth?.rawValue)
            },
            failed: { error in
                let outcome = switch error {
                case FCMError.deadlineExceeded: "expired"
                case FCMError.shutdown: "interrupted"
                default: "error"
                }
                // No access token (invalid_grant, token endpoint down): the credentials' problem.
                let auth: String? = if case FCMError.tokenEndpoint = error { "TOKEN_ENDPOINT" } else { nil }
                return ProviderSendVerdict(outcome: outcome, booked: true, error: "\(error)", authReason: auth)
            })
    }

    /// Swaps in `routes` at once; returns the clients no new route uses
    /// (sends in flight finish on them: ``retireWhenIdle(_:)``).
    public func replaceRoutes(_ routes: [Route]) -> [FCMClient] {
        let old = current.withLock { current in
            defer { current = routes }
            return current
        }
        return retirement.retire(replaced: old.map(\.client), keeping: routes.map(\.client))
    }

    public func retireWhenIdle(_ client: FCMClient) async {
        await retirement.retireWhenIdle(client) { await $0.shutdown() }
    }

    public func shutdown() async {
        for route in pools { await route.client.shutdown() }
        for client in retirement.takeAll() { await client.shutdown() }
        await simulator?.shutdown()
    }
}

// The gateway as the FCM adapter's routing: it hands out the client for a
// bundle and times every send through it, keeping its books.
extension FCMGateway: FCMRouting {
    public func client(bundleID: String) -> (client: FCMClient, projectID: String)? {
        route(bundleID: bundleID).map { ($0.client, $0.projectID) }
    }
}
