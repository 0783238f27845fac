import GRPCEngine
import HeraldCore
import HeraldPrimitives
import HeraldProtos
import PushProviders

/// `herald.v1.PushService/Status`: the operator's view of this instance.
///
/// Who sees what (SPEC §7, 2026-11-27), when tokens are configured:
/// - no `authorization` metadata: serving state and counts only (uptime,
///   message counts by state, lag, the server's connection and RPC counts,
///   the store's kind and health) — no version, no store location, no
///   provider pools (their route names carry team ids and bundles), no
///   error text;
/// - a token that is malformed or unknown: UNAUTHENTICATED, as every other
///   RPC (a caller who meant to authenticate learns that it failed);
/// - a token allowing `*`: everything;
/// - a token allowing some bundles: everything but the store's location,
///   and only the provider pools that serve one of its bundles.
/// With no tokens configured (loopback only), everything, as before.
struct StatusService: Sendable {
    static let path = "/herald.v1.PushService/Status"

    /// What a caller may see.
    enum View: Equatable {
        case everything
        case bundles(Set<String>)
        case anonymous

        func shows(_ bundles: Set<String>) -> Bool {
            switch self {
            case .everything: true
            case .anonymous: false
            case .bundles(let allowed): bundles.contains("*") || !bundles.isDisjoint(with: allowed)
            }
        }
    }

    let version: String
    let startedAtMilliseconds: Int64
    let startedAt: ContinuousClock.Instant
    let state: ServingStateCell
    let serverStats: @Sendable () -> GRPCServerStats
    /// Store and delivery figures, refreshed in the background.
    var snapshot: @Sendable () -> OperatorSnapshot = { OperatorSnapshot() }
    /// Decides the view (an open policy shows everything).
    var policy = AccessPolicy()
    /// The delivery policies in force (each shown to callers who see one of its bundles).
    var deliveryPolicies = DeliveryPolicyHolder()
    /// Event loops, compute threads and usable CPUs (shown to every caller).
    var threads = (eventLoops: 0, computeThreads: 0, usableCPUs: 0)

    /// - Throws: UNAUTHENTICATED for a token that is given but malformed or unknown.
    func view(_ metadata: GRPCMetadata) throws -> View {
        guard !policy.isOpen else { return .everything }
        guard metadata["authorization"] != nil else { return .anonymous }
        guard let grant = try policy.authenticate(metadata) else { return .everything }
        return grant.bundleIDs.contains("*") ? .everything : .bundles(grant.bundleIDs)
    }

    func status(_ request: GRPCRequest) throws -> [UInt8] {
        let view = try view(request.metadata)
        // Validates the (empty) request so that garbage is INVALID_ARGUMENT.
        try ProtobufC.withUnpacked(Herald__V1__StatusRequest.self, from: request.message) { _ in }
        let stats = serverStats()
        let arena = CArena()
        var response = Herald__V1__StatusResponse.initialized()
        response.serving = switch state.current {
        case .starting: HERALD__V1__SERVING_STATE__SERVING_STATE_STARTING
        case .serving: HERALD__V1__SERVING_STATE__SERVING_STATE_SERVING
        case .draining: HERALD__V1__SERVING_STATE__SERVING_STATE_DRAINING
        }
        response.version = arena.string(view == .anonymous ? "" : version)
        response.uptime_seconds = UInt64((ContinuousClock.now - startedAt).components.seconds)
        response.started_at = arena.string(RFC3339.format(Timestamp(milliseconds: startedAtMilliseconds)))
        response.server = arena.message(Herald__V1__ServerStatus.self) {
            $0.connections_open = UInt64(stats.connectionsOpen)
            $0.rpcs_in_flight = UInt64(stats.rpcsInFlight)
            $0.rpcs_total = UInt64(stats.rpcsTotal)
            $0.event_loops = UInt32(clamping: threads.eventLoops)
            $0.compute_threads = UInt32(clamping: threads.computeThreads)
            $0.usable_cpus = UInt32(clamping: threads.usableCPUs)
        }
        let figures = snapshot()
        let counts = MessageState.allCases.compactMap { state in
            figures.counts[state].map { count in
                arena.message(Herald__V1__MessageStateCount.self) {
                    $0.state = state.wire
                    $0.count = UInt64(count)
                }
            }
        }
        response.n_messages = counts.count
        response.messages = arena.pointerArray(counts)
        response.oldest_due_lag_ms = figures.oldestDueLagMilliseconds
        if let store = figures.store {
            response.store = arena.message(Herald__V1__StoreStatus.self) {
                $0.kind = arena.string(store.kind)
                $0.healthy = store.ok && state.readiness.storeWritable ? 1 : 0
                // The path, or the database's user and host, and the last error: `*` tokens only.
                $0.detail = arena.string(
                    view != .everything ? "" : store.lastError.map { "\(store.location): \($0)" } ?? store.location)
            }
        }
        // Each platform's pools have their own wire field (a new platform
        // needs one): the one place neutral reports meet the wire.
        let shown = figures.pools.filter { view.shows($0.bundleIDs) }
        let pools = shown.filter { $0.platform == .ios }.map { pool in
            arena.message(Herald__V1__ApnsPoolStatus.self) {
                $0.endpoint = arena.string(pool.endpoint)
                $0.connections_open = UInt32(pool.connectionsOpen)
                $0.streams_in_flight = UInt32(pool.streamsInFlight)
                // The provider's last refusal or failure, else the connection's.
                $0.last_error = arena.string(pool.lastError ?? "")
                $0.route = arena.string(pool.route)
                $0.last_error_at = arena.string(pool.lastErrorAt.map { LogLine.timestamp(milliseconds: $0) } ?? "")
                $0.auth_failures = UInt64(pool.authFailures.values.reduce(0, +))
                let reasons = pool.authFailures.sorted { $0.key < $1.key }.map { reason, count in
                    arena.message(Herald__V1__ProviderReasonCount.self) {
                        $0.reason = arena.string(reason)
                        $0.count = UInt64(count)
                    }
                }
                $0.n_auth_failure_reasons = reasons.count
                $0.auth_failure_reasons = arena.pointerArray(reasons)
            }
        }
        response.snapshot_age_ms = UInt64(max(0, (ContinuousClock.now - figures.takenAt).nanoseconds / 1_000_000))
        response.n_apns_pools = pools.count
        response.apns_pools = arena.pointerArray(pools)
        let fcmPools = shown.filter { $0.platform == .android }.map { pool in
            arena.message(Herald__V1__FcmPoolStatus.self) {
                $0.endpoint = arena.string(pool.endpoint)
                $0.connections_open = UInt32(pool.connectionsOpen)
                $0.streams_in_flight = UInt32(pool.streamsInFlight)
                $0.last_error = arena.string(pool.lastError ?? "")
                $0.route = arena.string(pool.route)
                $0.project = arena.string(pool.account ?? "")
                $0.last_error_at = arena.string(pool.lastErrorAt.map { LogLine.timestamp(milliseconds: $0) } ?? "")
                $0.auth_failures = UInt64(pool.authFailures.values.reduce(0, +))
                let reasons = pool.authFailures.sorted { $0.key < $1.key }.map { reason, count in
                    arena.message(Herald__V1__ProviderReasonCount.self) {
                        $0.reason = arena.string(reason)
                        $0.count = UInt64(count)
                    }
                }
                $0.n_auth_failure_reasons = reasons.count
                $0.auth_failure_reasons = arena.pointerArray(reasons)
                $0.access_tokens_minted = UInt64(pool.credentialsMinted)
            }
        }
        response.n_fcm_pools = fcmPools.count
        response.fcm_pools = arena.pointerArray(fcmPools)
        let policies = deliveryPolicies.current.rules.filter { view.shows(Set($0.bundles)) }.map { rules in
            arena.message(Herald__V1__DeliveryPolicyStatus.self) {
                let bundles = rules.bundles.map { arena.string($0) }
                $0.n_bundle_ids = bundles.count
                $0.bundle_ids = arena.pointerArray(bundles)
                $0.spec = arena.string(rules.canonical)
            }
        }
        response.n_delivery_policies = policies.count
        response.delivery_policies = arena.pointerArray(policies)
        return withExtendedLifetime(arena) { ProtobufC.pack(&response) }
    }
}
