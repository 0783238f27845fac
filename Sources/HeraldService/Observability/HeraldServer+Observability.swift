import HeraldStorage
import Logging
import ServiceLifecycle
import Synchronization

extension HeraldServer {
    /// The admin listener's bound address once it is up; nil when it is off.
    /// Throws `run()`'s error when it ended before binding.
    public func adminListeningAddress() async throws -> (host: String, port: Int)? {
        guard configuration.admin != nil else { return nil }
        return try await adminAddress.wait()
    }

    /// The store probe and the admin listener; sets the engine's call
    /// observer (RPC metrics, access log). Called once every method is
    /// registered.
    func observabilityServices(store: any ServableStore, probeDirectory: String?) throws -> [any Service] {
        let accessLog: AccessLog?
        if let path = configuration.accessLogPath {
            accessLog = try AccessLog(path: path, format: configuration.logFormat)
        } else if logger.logLevel <= .debug {
            accessLog = AccessLog(logger: logger, format: configuration.logFormat)
        } else {
            accessLog = nil
        }
        metrics.follow(state)
        server.observe(RPCObserver(metrics: metrics.rpcTable(methods: server.methods), accessLog: accessLog))
        var services: [any Service] = [StoreProbeService(
            directory: probeDirectory, store: store, state: state,
            interval: configuration.storeProbeInterval, logger: logger, metrics: metrics)]
        if let admin = configuration.admin {
            var endpoints = AdminEndpoints(metrics: metrics, state: state, alive: { [weak self] in self?.isRunning ?? false })
            endpoints.console = ConsoleService(
                status: status, counters: metrics.console, history: ConsoleHistoryCell(), store: store,
                events: store as? any DeliveryEventLog,
                reads: ReadAdmission(maxConcurrent: ConsoleService.maxConcurrentReads, maxQueued: ConsoleService.maxQueuedReads))
            services.append(AdminService(
                server: AdminServer(configuration: admin, endpoints: endpoints, logger: logger), address: adminAddress))
        }
        return services
    }
}

/// The admin listener as a service: up before the gRPC server binds (so
/// `/readyz` says 503 while starting), down after it drained.
struct AdminService: Service {
    let server: AdminServer
    let address: AdminAddress

    func run() async throws {
        do {
            address.set(try await server.start())
        } catch {
            address.fail(error)
            throw error
        }
        await untilGracefulShutdown()
        await server.stop()
    }
}

/// The admin listener's address, awaited by `herald serve` to print it.
final class AdminAddress: Sendable {
    private enum State {
        case waiting([CheckedContinuation<(host: String, port: Int), any Error>])
        case bound((host: String, port: Int))
        case failed(any Error)
    }

    private let state = Mutex(State.waiting([]))

    func wait() async throws -> (host: String, port: Int) {
        try await withCheckedThrowingContinuation { continuation in
            let ready: Result<(host: String, port: Int), any Error>? = state.withLock { state in
                switch state {
                case .waiting(var waiters):
                    waiters.append(continuation)
                    state = .waiting(waiters)
                    return nil
                case .bound(let address): return .success(address)
                case .failed(let error): return .failure(error)
                }
            }
            if let ready { continuation.resume(with: ready) }
        }
    }

    func set(_ address: (host: String, port: Int)) { finish(.success(address)) }

    /// Fails waiters (the listener or the instance did not come up); a bound
    /// address stays.
    func fail(_ error: any Error) { finish(.failure(error)) }

    private func finish(_ result: Result<(host: String, port: Int), any Error>) {
        let waiters = state.withLock { state -> [CheckedContinuation<(host: String, port: Int), any Error>] in
            guard case .waiting(let waiters) = state else { return [] }
            switch result {
            case .success(let address): state = .bound(address)
            case .failure(let error): state = .failed(error)
            }
            return waiters
        }
        for waiter in waiters { waiter.resume(with: result) }
    }
}
