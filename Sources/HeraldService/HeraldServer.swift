import APNs
public import APNsProvider
public import APNsSimulation
public import FCMProvider
public import GRPCEngine
import HeraldPrimitives
public import TLSTransport
import HeraldCore
public import HeraldStorage
public import Logging
public import ServiceLifecycle
import Synchronization
import TimeZones

/// Herald's version, reported by Status and `herald --version`.
public enum HeraldVersion {
    public static let current = "0.1.0"
}

/// How one Herald instance is set up.
public struct HeraldConfiguration: Sendable {
    /// The gRPC listener's address (`grpc`'s own defaults).
    public var host = GRPCServerConfiguration().host
    public var port = GRPCServerConfiguration().port
    /// Where the embedded store lives (`herald.sqlite` inside).
    public var dataDirectory = "./data"
    /// The gRPC engine's limits (message size, header list, streams).
    public var grpc = GRPCServerConfiguration()
    /// Tokens and the bundles they allow; empty serves loopback only.
    public var accessPolicy = AccessPolicy()
    /// How long in-flight RPCs may take to finish on shutdown.
    public var drainTimeout: Duration = .seconds(10)
    /// How hard a commit is synced before Schedule answers: `.sqliteFull`
    /// (fsync per group commit: survives kill -9 and power loss) or
    /// `.processCrash` (the WAL write is in the OS: survives kill -9).
    public var durability: SQLiteStore.Durability = .sqliteFull
    /// The short time after Schedule in which a traditional message can still
    /// be cancelled.
    public var graceSeconds: Int64 = 30
    /// The share of users the A/B split puts in the context-aware cohort.
    public var contextAwareShare = 0.5
    /// APNs clients by bundle and environment; nil starts the bundled
    /// simulator and delivers to it.
    public var apnsRoutes: [APNsGateway.Route]?
    /// With the bundled simulator: append every delivery it accepts to this
    /// file as a JSON line.
    public var simulatorRecordPath: String?
    /// Faults the bundled simulator injects (410 / 400 tokens, …).
    public var simulatorFaults = APNsSimulatorFaults()
    /// FCM clients by bundle (Android package name); nil starts the bundled
    /// FCM simulator and delivers every bundle's Android messages to it.
    public var fcmRoutes: [FCMGateway.Route]?
    /// Per Firebase project: most messages sent per minute (a token bucket).
    public var fcmRatePerMinute = Self.defaultFCMRatePerMinute
    /// `fcmRatePerMinute` unless set: FCM's default quota.
    public static let defaultFCMRatePerMinute = 600_000
    /// What the bundled FCM simulator is told (tokens, faults).
    public var fcmSimulator = FCMSimulatorSetup()
    /// Most messages being claimed, rendered and admitted at once (global);
    /// a message's send holds only its route's slot (`routeLimits`).
    public var maxDispatchesInFlight = 512
    /// Per APNs route (client): messages sending at once, and waiting.
    public var routeLimits = Dispatcher.RouteLimits()
    /// A stream APNs has not answered this long is reset and retried.
    public var apnsResponseTimeout: Duration = .seconds(30)
    /// The scheduler's clock.
    public var clock: any HeraldClock = SystemClock()
    /// The admin HTTP listener (`/metrics`, `/healthz`, `/readyz`); nil: off.
    public var admin: AdminConfiguration?
    /// TLS on the gRPC listener (SIGHUP re-reads its files); nil: h2c.
    public var tls: ServerTLS?
    /// One line per RPC (method, code, duration, peer, bundle); nil logs
    /// them at debug level instead.
    public var accessLogPath: String?
    /// The access log's format (the logs' own is the log handler's).
    public var logFormat = LogFormat.text
    /// How often the store's writability is probed (Health, `/readyz`).
    public var storeProbeInterval: Duration = .seconds(1)
    /// What SIGHUP re-reads (tokens file, APNs routes file); nil: SIGHUP
    /// is not trapped (in-process servers).
    public var reload: ReloadSources?
    /// How long finished messages (and so their idempotency keys) are kept.
    public var retention = RetentionPolicy()
    /// The bundles' delivery policies (SPEC §4b), swapped by SIGHUP.
    public var deliveryPolicies = DeliveryPolicyHolder()

    public init() {}

    /// The store: nil is the embedded one, `databasePath` (`--store`).
    public var store: StoreLocation?
    /// The read side's bounds (GetMessage, ListMessages, CampaignReport).
    public var readSide = ReadSideLimits()

    /// The embedded store's file.
    public var databasePath: String { Self.databasePath(in: dataDirectory) }

    /// The embedded store's file in a data directory (`herald backup` reads it too).
    public static func databasePath(in dataDirectory: String) -> String { "\(dataDirectory)/herald.sqlite" }
}

/// A configuration Herald refuses to start with.
public struct ConfigurationError: Error, CustomStringConvertible {
    public var description: String
}

/// One Herald instance: the gRPC server with Herald's services registered,
/// the durable store, the scheduler and dispatcher, and the APNs gateway.
///
/// A `Service`: `run()` opens the store and starts delivery, then runs the
/// parts as services of one `ServiceGroup` (see `HeraldServices.swift` for the
/// order) until a graceful shutdown (the parent group's, e.g. on SIGTERM, or
/// `shutdown()`), and returns once the store is closed.
public final class HeraldServer: Service, Sendable {
    /// Where `run()` is: waiting for the bound address, serving, or over.
    private enum Phase {
        case starting(waiters: [CheckedContinuation<(host: String, port: Int), any Error>])
        case serving((host: String, port: Int))
        case ended(any Error)
    }

    /// Render requests up to this size run on the event loop (typical ones are
    /// under 2 KiB and take microseconds); larger ones on the compute threads,
    /// so they never delay Health or small calls.
    static let renderInlineBytes = 16 * 1024

    public let configuration: HeraldConfiguration
    public let state = ServingStateCell()
    /// This instance's Prometheus metrics (served by the admin listener).
    public let metrics = HeraldMetrics(states: MessageState.allCases.map(\.rawValue))
    let server: GRPCServer
    /// The ContextPush web API (HTTP/1.1 on the gRPC port), given the
    /// Schedule and Cancel handlers once they exist.
    let webAPI: ContextPushAPI
    let logger: Logger
    /// The admin listener's bound address, once it is up.
    let adminAddress = AdminAddress()
    private let snapshot = OperatorSnapshotCell()
    /// Status, as the operator console shows it too.
    let status: StatusService
    private let phase = Mutex(Phase.starting(waiters: []))
    private let gatewayCell = Mutex<APNsGateway?>(nil)
    /// The running group, for `shutdown()` when no parent group drives this one.
    private let group = Mutex<ServiceGroup?>(nil)

    public init(configuration: HeraldConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        var grpc = configuration.grpc
        grpc.host = configuration.host
        grpc.port = configuration.port
        if let tls = configuration.tls {
            let handshakeTimeout = grpc.handshakeTimeout
            grpc.connectionPrologue = { channel in
                try channel.pipeline.syncOperations.addHandler(tls.makeHandler(for: .http2OrHTTP1, handshakeTimeout: handshakeTimeout))
            }
        }
        // HTTP/1.1 on the same port: the ContextPush web API (SPEC §8).
        let webAPI = ContextPushAPI(admission: configuration.accessPolicy.admission)
        self.webAPI = webAPI
        let webLimits = WebLimits(grpc)
        // Connect unary on HTTP/1.1 (and HTTP/2, below): the registered handlers, run in process.
        let connect = ConnectBox()
        grpc.http1Pipeline = { channel in try WebPipeline.configure(channel, api: webAPI, connect: connect.api, limits: webLimits) }
        grpc.plainCalls = GRPCPlainCalls(
            admit: { path, contentType, metadata in connect.api?.plainCalls.admit(path, contentType, metadata) },
            refusal: { status in ConnectAnswer.error(status).plain })
        let server = GRPCServer(configuration: grpc, logger: logger)
        connect.api = ConnectAPI(
            server: server, maxBodyBytes: webLimits.maxBodyBytes,
            unauthenticatedMaxBodyBytes: grpc.unauthenticatedMaxReceiveMessageBytes)
        self.server = server
        webAPI.record { request, code, nanoseconds in
            server.recordInProcessCall(request, code: code, durationNanoseconds: nanoseconds)
        }

        let health = HealthService(state: state)
        // Health, reflection and Status answer without a token: they run
        // under the engine's limits for unauthenticated methods (small
        // messages, their own buffer budget, bounded long-lived streams).
        server.register(HealthService.checkPath, .sync(health.check), limits: .unauthenticated)
        let watch = HealthWatchService(state: state)
        server.register(HealthWatchService.path, streaming: .serverStreaming { request, writer in
            try await watch.watch(request: request.message) { try await writer.send($0) }
        }, limits: .unauthenticated)
        // Reflection describes the API, as Health and Status do the instance:
        // no token needed (grpcurl and grpcio's reflection client send none).
        let reflection = ReflectionService()
        for path in [ReflectionService.v1Path, ReflectionService.v1alphaPath] {
            server.register(path, streaming: .bidirectional { _, messages, writer in
                try await reflection.serve(messages) { try await writer.send($0) }
            }, limits: .unauthenticated)
        }
        let snapshot = self.snapshot
        let status = StatusService(
            version: HeraldVersion.current,
            startedAtMilliseconds: Timestamp.nowMilliseconds(),
            startedAt: .now,
            state: state,
            serverStats: { server.stats() },
            snapshot: { snapshot.current },
            policy: configuration.accessPolicy,
            deliveryPolicies: configuration.deliveryPolicies,
            threads: (configuration.grpc.eventLoopThreads, configuration.grpc.computeThreads, CPUBudget.atStart.usable)
        )
        self.status = status
        // A token is optional (it only adds detail): unauthenticated limits.
        server.register(StatusService.path, .sync(status.status), limits: .unauthenticated)
        let render = RenderService(
            policy: configuration.accessPolicy, now: Timestamp.nowMilliseconds, deliveryPolicies: configuration.deliveryPolicies)
        server.register(
            RenderService.path, DomainStatus.compute(inlineBytes: Self.renderInlineBytes, render.render),
            admission: configuration.accessPolicy.admission)
    }

    /// Where pushes go, once started.
    public var apnsGateway: APNsGateway? { gatewayCell.withLock { $0 } }

    /// Opens the store (refusing a corrupt or unwritable one), resolves
    /// messages caught mid-send by a crash, rebuilds the due index, then runs
    /// delivery and the server until a graceful shutdown, and closes the store.
    ///
    /// - Throws: `ConfigurationError` when no tokens are configured and the
    ///   host is not loopback; the store's error when it cannot be opened;
    ///   the server's when it cannot bind.
    public func run() async throws {
        do {
            let services = try await prepare()
            let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: services, logger: logger))
            self.group.withLock { $0 = group }
            try await group.run()
            end(with: ConfigurationError(description: "Herald stopped"))
            logger.info("stopped")
        } catch {
            end(with: error)
            throw error
        }
    }

    /// The bound address, once serving; throws `run()`'s error when it ended
    /// before binding.
    public func listeningAddress() async throws -> (host: String, port: Int) {
        try await withCheckedThrowingContinuation { continuation in
            let ready: Result<(host: String, port: Int), any Error>? = phase.withLock { phase in
                switch phase {
                case .starting(var waiters):
                    waiters.append(continuation)
                    phase = .starting(waiters: waiters)
                    return nil
                case .serving(let address): return .success(address)
                case .ended(let error): return .failure(error)
                }
            }
            if let ready { continuation.resume(with: ready) }
        }
    }

    /// Runs the server without a parent group (in-process tests, tools):
    /// `run()` as a child task; `body` gets the bound address once serving;
    /// then a graceful shutdown, as SIGTERM under `herald serve` (Health
    /// NOT_SERVING, GOAWAY, in-flight RPCs finish within the drain bound,
    /// pushes in flight finish, the store is closed) before it returns.
    ///
    /// - Throws: `run()`'s error, else `body`'s.
    public func withRunning<T: Sendable>(_ body: ((host: String, port: Int)) async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { children in
            children.addTask { try await self.run() }
            let outcome: Result<T, any Error>
            do {
                outcome = .success(try await body(try await listeningAddress()))
            } catch {
                outcome = .failure(error)
            }
            await shutdown()
            try await children.waitForAll()
            return try outcome.get()
        }
    }

    /// Starts a graceful shutdown of a `run()` without a parent group (see
    /// `withRunning`); `run()` returns when it is complete.
    public func shutdown() async {
        await group.withLock { $0 }?.triggerGracefulShutdown()
    }

    private func bound(_ address: (host: String, port: Int)) {
        let waiters = phase.withLock { phase -> [CheckedContinuation<(host: String, port: Int), any Error>] in
            guard case .starting(let waiters) = phase else { return [] }
            phase = .serving(address)
            return waiters
        }
        for waiter in waiters { waiter.resume(returning: address) }
    }

    /// True until `run()` has ended (`/healthz`).
    var isRunning: Bool {
        phase.withLock { if case .ended = $0 { false } else { true } }
    }

    private func end(with error: any Error) {
        adminAddress.fail(error)
        let waiters = phase.withLock { phase -> [CheckedContinuation<(host: String, port: Int), any Error>] in
            defer { phase = .ended(error) }
            guard case .starting(let waiters) = phase else { return [] }
            return waiters
        }
        for waiter in waiters { waiter.resume(throwing: error) }
    }

    /// Everything up to serving: the store, recovery, the gateway, the due
    /// index, the handlers; returns the services in start order.
    private func prepare() async throws -> [any Service] {
        if let refusal = configuration.openAccessRefusal { throw ConfigurationError(description: refusal) }
        try Self.checkBeforeStarting(configuration)
        let clock = configuration.clock
        let opened = try await OpenedStore.open(configuration, metrics: metrics, logger: logger)
        let (store, lock) = (opened.store, opened.lock)
        let gateway: ProviderGateways
        let scheduler: Scheduler
        let pending: Int
        do {
            let interrupted = try await store.recoverInterrupted(now: clock.now())
            if !interrupted.resumed.isEmpty {
                logger.warning("messages caught mid-send by a crash resume; devices handed to their provider without an answer are UNCONFIRMED, never resent",
                               metadata: ["messages": "\(interrupted.resumed.count)", "unconfirmed_devices": "\(interrupted.unconfirmedDevices)"])
            }
            gateway = try await ProviderGateways.start(configuration, logger: logger)
            if let shared = store as? any SharedDueStore {
                // Replicas share the due messages: polled from the database,
                // none loaded here (a million pending must not delay serving).
                pending = 0
                scheduler = Scheduler(clock: clock, maxInFlight: configuration.maxDispatchesInFlight, logger: logger,
                                      shared: shared)
                logger.info("due messages polled from the shared store", metadata: [
                    "replica": "\(shared.replicaID)", "lease_ms": "\(shared.leaseMilliseconds)",
                ])
            } else {
                let rebuildStart = ContinuousClock.now
                var entries: [(id: String, dueAt: Int64, slot: DueSlot)] = []
                try await store.forEachPendingBatch { page in
                    entries.append(contentsOf: page.lazy.map { (id: $0.id, dueAt: $0.dueAt, slot: $0.dueSlot) })
                }
                pending = entries.count
                scheduler = Scheduler(clock: clock, maxInFlight: configuration.maxDispatchesInFlight, logger: logger)
                await scheduler.load(entries)
                logger.info("due index rebuilt", metadata: [
                    "pending": "\(pending)", "elapsed": "\(ContinuousClock.now - rebuildStart)",
                ])
            }
        } catch {
            // Not yet a service: nothing else would close it.
            await store.close()
            lock?.release()
            throw error
        }
        gatewayCell.withLock { $0 = gateway.apns }
        gateway.observe(metrics: metrics, logger: logger)
        // One provider per platform (ProviderGateways.registry).
        let providers = gateway.registry(lateness: { [metrics] in metrics.dispatchLateness(milliseconds: $0) })
        let metrics = self.metrics
        // One zone cache: the dispatcher's device decisions and Schedule's `send_at`.
        let zones = ZoneCache()
        let dispatcher = Dispatcher(
            store: store, providers: providers, clock: clock, scheduler: scheduler, logger: logger, routeLimits: configuration.routeLimits,
            decode: StoredRequest.decode,
            policy: DispatchPolicy(
                rules: configuration.deliveryPolicies, zones: zones, ledger: store, graceSeconds: configuration.graceSeconds,
                observer: PolicyObserver(held: { metrics.policyHeld($0) }, suppressed: { metrics.policySuppressed($0) })))
        // Each bundle's max-per-second: carried out by the due index, or
        // (polling a shared store) booked on the store's ledger by every replica.
        await scheduler.setThrottle(SchedulerThrottle(
            rates: { [policies = configuration.deliveryPolicies] in policies.current.rates },
            waited: { metrics.throttleWaited(milliseconds: $0) }, ledger: store))
        let revokes = RevokeQueue()
        registerDeliveryHandlers(store: store, scheduler: scheduler, revokes: revokes, gateway: gateway, zones: zones)

        let stopper = GatewayStopper(gateway)
        var services: [any Service] = [StoreService(store: store, lock: lock)]
        // After the store: stopped (reverse order) before it closes.
        var retention = configuration.retention
        let policies = configuration.deliveryPolicies
        // Counted sends matter for the longest cap period in force (SIGHUP may change it).
        retention.countedSendsHorizon = { policies.current.longestCapPeriodMilliseconds }
        services.append(RetentionService(store: store, policy: retention, clock: clock, logger: logger))
        services += try observabilityServices(store: store, probeDirectory: opened.probeDirectory)
        if let path = configuration.simulatorRecordPath, let simulator = gateway.apns.simulator {
            // Subscribed now, before any push, so no delivery is missed.
            services.append(SimulatorRecorderService(deliveries: simulator.deliveryStream(), path: path, logger: logger))
        }
        services.append(GatewayService(stopper: stopper))
        if let sources = configuration.reload {
            let reloader = ConfigReloader(
                sources: sources, policy: configuration.accessPolicy, routes: gateway.routeReloads(sources, logger: logger), logger: logger,
                tls: configuration.tls, deliveryPolicies: configuration.deliveryPolicies)
            services.append(ReloadService(reloader: reloader))
        }
        services.append(StatusSnapshotService(
            cell: snapshot, store: store, gateway: gateway, clock: clock, logger: logger, metrics: metrics))
        services.append(DeliveryService(
            scheduler: scheduler, dispatcher: dispatcher, revokes: revokes, gateway: stopper,
            drainTimeout: configuration.drainTimeout, logger: logger))
        services.append(GRPCService(
            server: server, state: state, drainTimeout: configuration.drainTimeout, pending: pending, logger: logger,
            bound: { [weak self] address in self?.bound(address) }))
        return services
    }

    private func registerDeliveryHandlers(
        store: any ServableStore, scheduler: Scheduler, revokes: RevokeQueue, gateway: ProviderGateways, zones: ZoneCache
    ) {
        let policy = configuration.accessPolicy
        var routes = DeliveryRoutes(
            policy: policy, clock: configuration.clock,
            split: ABSplit(contextAwareShare: configuration.contextAwareShare), graceSeconds: configuration.graceSeconds,
            coverage: DeliveryCoverage(providers: gateway.providers))
        routes.deliveryPolicies = configuration.deliveryPolicies
        routes.zones = zones
        for route in routes.handlers(store: store, scheduler: scheduler, revokes: revokes) {
            server.register(route.path, route.handler, admission: policy.admission)
            webAPI.register(route.path, route.handler)
        }
        let reads = ReadAdmission(maxConcurrent: configuration.readSide.maxConcurrent, maxQueued: configuration.readSide.maxQueued)
        ReadSideAccess.register(on: server, policy: policy, store: store, reads: reads)
        if let log = store as? any DeliveryEventLog {
            // A shared store's events come from every replica: looked for a little less often.
            let events = StreamEventsService(
                policy: policy, log: log, slots: StreamSlots(capacity: configuration.readSide.maxEventStreams),
                pollInterval: store is any SharedDueStore ? .milliseconds(200) : .milliseconds(100))
            server.register(StreamEventsService.path, streaming: .serverStreaming { request, writer in
                do {
                    try await events.stream(request) { try await writer.send(contentsOf: $0) }
                } catch {
                    throw DomainStatus.status(for: error) ?? error
                }
            }, admission: policy.admission)
        }
    }
}
