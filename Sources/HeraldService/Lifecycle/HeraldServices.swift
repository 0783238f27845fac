import APNsProvider
import APNsSimulation
import GRPCEngine
import HeraldCore
import HeraldStorage
import Logging
import ServiceLifecycle
import Synchronization

// The parts of a running Herald as `Service`s, listed in start order by
// `HeraldServer.run()`. A ServiceGroup shuts services down gracefully in
// reverse order, each only after the one after it has returned, which gives
// today's drain order: the gRPC server drains (Health NOT_SERVING, GOAWAY,
// in-flight RPCs within the drain bound), then delivery stops (pushes and
// revokes in flight finish), then the refreshers, then the APNs gateway
// (the simulator's record ends complete), and the store closes last.

/// Returns at this service's turn in a graceful shutdown, or at once when
/// the task is cancelled (the group is being torn down).
func untilGracefulShutdown() async {
    try? await gracefulShutdown()
}

/// The store: opened before the group starts (recovery and the due index
/// rebuild need it), closed here last, every commit flushed; then the data
/// directory's lock (SQLite's) is released.
struct StoreService: Service {
    let store: any ServableStore
    var lock: DataDirectoryLock?

    func run() async {
        await untilGracefulShutdown()
        await store.close()
        lock?.release()
    }
}

/// Stops the APNs gateway once: at its turn, or earlier when pushes are still
/// in flight at the drain bound (stopping it ends their sends).
final class GatewayStopper: Sendable {
    private let shutdown: @Sendable () async -> Void
    private let stopped = Atomic<Bool>(false)

    init(_ gateway: ProviderGateways) { shutdown = { await gateway.shutdown() } }

    /// Any other gateway (a fake in tests).
    init(shutdown: @escaping @Sendable () async -> Void) { self.shutdown = shutdown }

    func stop() async {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        await shutdown()
    }
}

/// The APNs clients (and the bundled simulator), stopped after delivery so
/// that pushes in flight get their answers first.
struct GatewayService: Service {
    let stopper: GatewayStopper

    func run() async {
        await untilGracefulShutdown()
        await stopper.stop()
    }
}

/// Appends the bundled simulator's deliveries to a file. Not cancelled at a
/// graceful shutdown: the delivery stream ends when the simulator stops (the
/// gateway, shut down just before this service), so the record holds every
/// delivery the simulator accepted.
struct SimulatorRecorderService: Service {
    let deliveries: AsyncStream<APNsDelivery>
    let path: String
    let logger: Logger

    func run() async {
        await SimulatorRecorder.record(deliveries, to: path, logger: logger)
        // A service that returns before its turn would fail the group.
        await untilGracefulShutdown()
    }
}

/// Recomputes the operator snapshot Status serves (counts, lag, pools).
struct StatusSnapshotService: Service {
    let cell: OperatorSnapshotCell
    let store: any HeraldStore
    let gateway: ProviderGateways
    let clock: any HeraldClock
    let logger: Logger
    /// Also refreshes the gauges of `/metrics` (counts, lag, connections).
    var metrics: HeraldMetrics?

    func run() async {
        let (cell, store, gateway, clock, logger, metrics) = (cell, store, gateway, clock, logger, metrics)
        await cancelWhenGracefulShutdown {
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
                snapshot.pools = await gateway.providers.poolReports()
                snapshot.takenAt = .now
                cell.set(snapshot)
                metrics?.refresh(snapshot)
                // Every second, or less often when counting is costly (a
                // million rows): the refresh takes at most ~5% of the time.
                try? await Task.sleep(for: max(.seconds(1), (ContinuousClock.now - began) * 20))
            }
        }
    }
}

/// Revoke pushes owed by Cancel, run by `DeliveryService` instead of a task
/// per call, so a shutdown waits for the ones in flight. A revoke queued when
/// delivery has stopped is not lost: it is owed in the store and resumed at
/// the next start.
final class RevokeQueue: Sendable {
    let messages: AsyncStream<StoredMessage>
    private let continuation: AsyncStream<StoredMessage>.Continuation

    init() {
        (messages, continuation) = AsyncStream.makeStream()
    }

    func enqueue(_ message: StoredMessage) {
        continuation.yield(message)
    }
}

/// The scheduler's loop handing due messages to the dispatcher, and the
/// dispatcher's revokes (owed ones from before a restart, then Cancel's).
///
/// At its turn it stops taking work; pushes and revokes in flight are not
/// cancelled (that would withdraw them from APNs) but get the drain bound to
/// finish. Past it the gateway is stopped, which ends their sends; what is
/// still claimed is resolved by the crash rule at the next start.
struct DeliveryService: Service {
    let scheduler: Scheduler
    let dispatcher: Dispatcher
    let revokes: RevokeQueue
    let gateway: GatewayStopper
    let drainTimeout: Duration
    let logger: Logger

    func run() async {
        let (scheduler, dispatcher, revokes) = (scheduler, dispatcher, revokes)
        await withDiscardingTaskGroup { owner in
            // The hand-over log's writes, until the last push has returned.
            owner.addTask { await dispatcher.run() }
            await withTaskGroup(of: Bool.self) { race in
                race.addTask {
                    await withDiscardingTaskGroup { work in
                        // At the graceful shutdown the scheduler stops taking
                        // work and waits for its dispatches in flight (its
                        // children, not cancelled).
                        work.addTask {
                            if scheduler.shared != nil {
                                await scheduler.run(claimedBatches: { batch, leases in
                                    await dispatcher.dispatch(claimed: batch, leases: leases)
                                })
                            } else {
                                await scheduler.run(batches: { ids, leases in await dispatcher.dispatch(batch: ids, leases: leases) })
                            }
                        }
                        work.addTask {
                            await untilGracefulShutdown()
                            await scheduler.stop()
                        }
                        work.addTask { await dispatcher.resumeRevokes() }
                        for await message in revokes.messages.cancelOnGracefulShutdown() {
                            work.addTask { await dispatcher.revoke(message) }
                        }
                    }
                    return true
                }
                race.addTask {
                    await untilGracefulShutdown()
                    // Cancelled (the work finished first): not a timeout.
                    do { try await Task.sleep(for: drainTimeout) } catch { return true }
                    return false
                }
                if await race.next() ?? true {
                    race.cancelAll()
                } else {
                    logger.warning("pushes still in flight at the drain bound; they resolve at the next start")
                    await gateway.stop()
                }
                await race.waitForAll()
            }
            dispatcher.finish()
        }
    }
}

/// The gRPC server: binds and serves; at its turn Health turns NOT_SERVING,
/// GOAWAY goes out and in-flight RPCs get the drain bound to finish.
struct GRPCService: Service {
    let server: GRPCServer
    let state: ServingStateCell
    let drainTimeout: Duration
    let pending: Int
    let logger: Logger
    let bound: @Sendable ((host: String, port: Int)) -> Void

    func run() async throws {
        let address = try await server.start()
        state.set(.serving)
        logger.info("serving", metadata: ["host": "\(address.host)", "port": "\(address.port)", "pending": "\(pending)"])
        bound(address)
        await untilGracefulShutdown()
        state.set(.draining)
        logger.info("draining", metadata: ["timeout": "\(drainTimeout)"])
        await server.shutdownGracefully(timeout: drainTimeout)
    }
}
