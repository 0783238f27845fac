import APNs
import TLSTransport
import APNsSimulator
import GRPCServer
import HeraldCore
import HeraldStore
import Logging
import Synchronization

/// Herald's version, reported by Status and `herald --version`.
public enum HeraldVersion {
    public static let current = "0.1.0"
}

/// How one Herald instance is set up.
public struct HeraldConfiguration: Sendable {
    public var host = "127.0.0.1"
    public var port = 50051
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
    /// Most messages being claimed, rendered and admitted at once (global);
    /// a message's send holds only its route's slot (`routeLimits`).
    public var maxDispatchesInFlight = 512
    /// Per APNs route (client): messages sending at once, and waiting.
    public var routeLimits = Dispatcher.RouteLimits()
    /// A stream APNs has not answered this long is reset and retried.
    public var apnsResponseTimeout: Duration = .seconds(30)
    /// The scheduler's clock.
    public var clock: any HeraldClock = SystemClock()

    public init() {}

    /// The embedded store's file.
    public var databasePath: String { "\(dataDirectory)/herald.sqlite" }
}

/// A configuration Herald refuses to start with.
public struct ConfigurationError: Error, CustomStringConvertible {
    public var description: String
}

/// One Herald instance: the gRPC server with Herald's services registered,
/// the durable store, the scheduler and dispatcher, and the APNs gateway.
public final class HeraldServer: Sendable {
    /// The parts that exist once started.
    struct Runtime: Sendable {
        var store: SQLiteStore
        var gateway: APNsGateway
        var scheduler: Scheduler
        var dispatcher: Dispatcher
        var background: [Task<Void, Never>]
    }

    /// Render requests up to this size run on the event loop (typical ones are
    /// under 2 KiB and take microseconds); larger ones on the compute threads,
    /// so they never delay Health or small calls.
    static let renderInlineBytes = 16 * 1024

    public let configuration: HeraldConfiguration
    public let state = ServingStateCell()
    private let server: GRPCServer
    private let logger: Logger
    private let snapshot = OperatorSnapshotCell()
    private let runtime = Mutex<Runtime?>(nil)

    public init(configuration: HeraldConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        var grpc = configuration.grpc
        grpc.host = configuration.host
        grpc.port = configuration.port
        let server = GRPCServer(configuration: grpc, logger: logger)
        self.server = server

        let health = HealthService(state: state)
        server.register(HealthService.checkPath, .sync(health.check))
        let snapshot = self.snapshot
        let status = StatusService(
            version: HeraldVersion.current,
            startedAtMilliseconds: EpochTime.nowMilliseconds(),
            startedAt: .now,
            state: state,
            serverStats: { server.stats() },
            snapshot: { snapshot.current }
        )
        server.register(StatusService.path, .sync(status.status))
        let render = RenderService(policy: configuration.accessPolicy, now: EpochTime.nowMilliseconds)
        server.register(
            RenderService.path, DomainStatus.compute(inlineBytes: Self.renderInlineBytes, render.render),
            admission: configuration.accessPolicy.admission)
    }

    /// Where pushes go, once started.
    public var apnsGateway: APNsGateway? { runtime.withLock { $0?.gateway } }

    /// Opens the store (refusing a corrupt or unwritable one), resolves
    /// messages caught mid-send by a crash, rebuilds the due index, starts
    /// delivery, then binds and serves. Returns the bound address.
    ///
    /// - Throws: `ConfigurationError` when no tokens are configured and the
    ///   host is not loopback; the store's error when it cannot be opened.
    public func start() async throws -> (host: String, port: Int) {
        if configuration.accessPolicy.isOpen && !AccessPolicy.isLoopback(configuration.host) {
            throw ConfigurationError(description:
                "no access tokens are configured, so Herald serves on loopback only; "
                + "refusing to listen on \(configuration.host) (give --tokens-file, or use 127.0.0.1)")
        }
        let clock = configuration.clock
        try POSIXFile.createDirectories(configuration.dataDirectory)
        var storeOptions = SQLiteStore.Options()
        storeOptions.durability = configuration.durability
        let store = try SQLiteStore(path: configuration.databasePath, options: storeOptions)
        let interrupted = try await store.recoverInterrupted(now: clock.now())
        if !interrupted.resumed.isEmpty {
            logger.warning("messages caught mid-send by a crash resume; devices handed to APNs without an answer are UNCONFIRMED, never resent",
                           metadata: ["messages": "\(interrupted.resumed.count)", "unconfirmed_devices": "\(interrupted.unconfirmedDevices)"])
        }
        let gateway: APNsGateway
        if let routes = configuration.apnsRoutes {
            gateway = APNsGateway(routes: routes)
        } else {
            gateway = try await APNsGateway.embedded(
                faults: configuration.simulatorFaults, responseTimeout: configuration.apnsResponseTimeout, logger: logger)
        }
        let scheduler = Scheduler(clock: clock, maxInFlight: configuration.maxDispatchesInFlight, logger: logger)
        let dispatcher = Dispatcher(
            store: store, gateway: gateway, clock: clock, scheduler: scheduler, logger: logger, routeLimits: configuration.routeLimits,
            decode: StoredRequest.decode)

        let rebuildStart = ContinuousClock.now
        var entries: [(id: String, dueAt: Int64)] = []
        try await store.forEachPendingBatch { page in
            entries.append(contentsOf: page.lazy.map { (id: $0.id, dueAt: $0.dueAt) })
        }
        let pending = entries.count
        await scheduler.load(entries)
        entries = []
        logger.info("due index rebuilt", metadata: [
            "pending": "\(pending)", "elapsed": "\(ContinuousClock.now - rebuildStart)",
        ])

        registerDeliveryHandlers(store: store, scheduler: scheduler, dispatcher: dispatcher)
        var background = [
            Task { await scheduler.run { id, lease in await dispatcher.dispatch(id, lease: lease) } },
            Task { await dispatcher.resumeRevokes() },
            Task { [snapshot, logger] in await Self.refreshSnapshots(snapshot, store: store, gateway: gateway, clock: clock, logger: logger) },
        ]
        if let path = configuration.simulatorRecordPath, let simulator = gateway.simulator {
            background.append(Task { await SimulatorRecorder.record(simulator, to: path, logger: logger) })
        }
        runtime.withLock { $0 = Runtime(store: store, gateway: gateway, scheduler: scheduler, dispatcher: dispatcher, background: background) }

        let address = try await server.start()
        state.set(.serving)
        logger.info("serving", metadata: ["host": "\(address.host)", "port": "\(address.port)", "pending": "\(pending)"])
        return address
    }

    private func registerDeliveryHandlers(store: SQLiteStore, scheduler: Scheduler, dispatcher: Dispatcher) {
        let policy = configuration.accessPolicy
        let clock = configuration.clock
        let schedule = ScheduleService(
            policy: policy, store: store, scheduler: scheduler, clock: clock,
            split: ABSplit(contextAwareShare: configuration.contextAwareShare), graceSeconds: configuration.graceSeconds)
        let admission = policy.admission
        server.register(ScheduleService.path, DomainStatus.async(schedule.schedule), admission: admission)
        let cancel = CancelService(policy: policy, store: store, scheduler: scheduler, dispatcher: dispatcher, clock: clock)
        server.register(CancelService.path, DomainStatus.async(cancel.cancel), admission: admission)
        let report = ReportEventService(policy: policy, store: store, scheduler: scheduler, clock: clock)
        server.register(ReportEventService.path, DomainStatus.async(report.report), admission: admission)
        let devices = DeviceHandlers(policy: policy, store: store, clock: clock)
        server.register(DeviceHandlers.registerPath, DomainStatus.async(devices.register), admission: admission)
        server.register(DeviceHandlers.unregisterPath, DomainStatus.async(devices.unregister), admission: admission)
    }

    /// Stops taking work (Health turns NOT_SERVING), sends GOAWAY, lets
    /// in-flight RPCs finish within the drain bound, stops delivery (pushes in
    /// flight finish), and closes the store (every commit flushed).
    public func shutdown() async {
        state.set(.draining)
        logger.info("draining", metadata: ["timeout": "\(configuration.drainTimeout)"])
        await server.shutdownGracefully(timeout: configuration.drainTimeout)
        let parts = runtime.withLock { runtime -> Runtime? in
            defer { runtime = nil }
            return runtime
        }
        if let parts {
            // Pushes in flight finish (bounded by the drain timeout); what is
            // still claimed after that is resolved at the next start.
            for task in parts.background { task.cancel() }
            let finished = await Self.wait(for: parts.background, upTo: configuration.drainTimeout)
            if !finished { logger.warning("pushes still in flight at the drain bound; they resolve at the next start") }
            await parts.gateway.shutdown()
            await parts.store.close()
        }
        logger.info("stopped")
    }

    /// Waits for `tasks` to end, at most `bound`; true when they all ended.
    /// (Awaiting a task's value cannot be cancelled, so the two waits race
    /// as unstructured tasks and the first to finish answers.)
    private static func wait(for tasks: [Task<Void, Never>], upTo bound: Duration) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let answered = Mutex(false)
            let answer = { @Sendable (value: Bool) in
                if answered.withLock({ done in defer { done = true }; return !done }) { continuation.resume(returning: value) }
            }
            Task {
                for task in tasks { await task.value }
                answer(true)
            }
            Task {
                try? await Task.sleep(for: bound)
                answer(false)
            }
        }
    }

    private static func refreshSnapshots(
        _ cell: OperatorSnapshotCell, store: SQLiteStore, gateway: APNsGateway, clock: any HeraldClock, logger: Logger
    ) async {
        while !Task.isCancelled {
            let began = ContinuousClock.now
            var snapshot = OperatorSnapshot()
            do {
                snapshot.counts = try await store.countsByState()
                let now = clock.now()
                snapshot.oldestDueLagMilliseconds = try await store.oldestDue(now: now).map { max(0, now - $0) } ?? 0
            } catch {
                logger.warning("status refresh failed", metadata: ["error": "\(error)"])
            }
            snapshot.store = await store.health()
            snapshot.pools = await gateway.poolStatuses()
            cell.set(snapshot)
            // Every second, or less often when counting is costly (a million
            // rows): the refresh takes at most ~5% of the time.
            try? await Task.sleep(for: max(.seconds(1), (ContinuousClock.now - began) * 20))
        }
    }
}
