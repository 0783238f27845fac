import Foundation
import HeraldCore
@testable import HeraldPostgres
import Testing
@testable import HeraldStorage

/// Cap reservations per second (`PolicyLedger.reserveCountedSend`), durable:
/// SQLite (FULL, group commit) and PostgreSQL (one and two replicas), many
/// users (the dispatcher's case: sends spread over users, each reserved
/// just before its push) and one hot user (every reservation queues on
/// that user's lock). Skipped unless `HERALD_BENCH=1`; PostgreSQL needs
/// `HERALD_TEST_POSTGRES_URL`.
///
///   HERALD_BENCH=1 swift test --filter LedgerBenchmarks
@Suite("Ledger benchmarks", .enabled(if: ProcessInfo.processInfo.environment["HERALD_BENCH"] == "1"), .serialized,
       .timeLimit(.minutes(5)))
struct LedgerBenchmarks {
    static let caps = [CapLimit(count: 3, periodMilliseconds: 86_400_000), CapLimit(count: 10, periodMilliseconds: 7 * 86_400_000)]

    /// `callers` tasks reserve back to back for `StoreBenchmarks.seconds`,
    /// `batch` reservations a call (`reserveCountedSends`, as the
    /// dispatcher would for a claimed batch), spread over the given stores;
    /// message ids are unique, users `users` apart (1: one hot user); a
    /// bundle of its own per run.
    static func reservations(_ label: String, stores: [any PolicyLedger], callers: Int, users: Int, batch: Int = 1) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(Int(StoreBenchmarks.seconds * 1_000))
        let start = clock.now
        let results = try await withThrowingTaskGroup(of: (latencies: [Double], reserved: Int).self) { group in
            for caller in 0..<callers {
                let store = stores[caller % stores.count]
                group.addTask {
                    var latencies: [Double] = [], reserved = 0, i = caller
                    while clock.now < deadline {
                        let requests = (0..<batch).map { k in
                            let n = i * batch + k
                            return CapReservation(
                                bundleID: "com.example.\(label)", userID: "user-\(n % users)", campaignID: "c-\(n % 5)",
                                messageID: "m-\(n)", now: 1_800_000_000_000 + Int64(n), caps: caps,
                                campaignCaps: [CapLimit(count: 1, periodMilliseconds: 86_400_000)], notAfter: 1_900_000_000_000)
                        }
                        let began = clock.now
                        for answer in try await store.reserveCountedSends(requests) {
                            if case .reserved = answer { reserved += 1 }
                        }
                        let elapsed = began.duration(to: clock.now)
                        latencies.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1e3)
                        i += callers
                    }
                    return (latencies, reserved)
                }
            }
            return try await group.reduce(into: (latencies: [Double](), reserved: 0)) {
                $0.latencies += $1.latencies
                $0.reserved += $1.reserved
            }
        }
        let elapsed = start.duration(to: clock.now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let sorted = results.latencies.sorted()
        StoreBenchmarks.report(String(
            format: "reservations %@ callers=%d batch=%d users=%d reservations=%d reserved=%d seconds=%.2f reservations_per_s=%.0f call_p50_ms=%.2f call_p99_ms=%.2f",
            label, callers, batch, users, sorted.count * batch, results.reserved, seconds, Double(sorted.count * batch) / seconds,
            StoreBenchmarks.percentile(sorted, 0.5), StoreBenchmarks.percentile(sorted, 0.99)))
    }

    @Test func sqlite() async throws {
        let store = try SQLiteStore(path: try StoreBenchmarks.freshPath("ledger.sqlite"))
        try await Self.reservations("sqlite", stores: [store], callers: 64, users: 100_000)
        try await Self.reservations("sqlite-batches", stores: [store], callers: 8, users: 100_000, batch: 100)
        try await Self.reservations("sqlite-hot-user", stores: [store], callers: 64, users: 1)
        await store.close()
    }

    @Test(.enabled(if: PostgresTestDatabase.isEnabled)) func postgres() async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            var stores: [PostgresStore] = []
            for name in ["a", "b"] {
                var replica = configuration
                replica.replicaID = name
                replica.maximumConnections = 16
                stores.append(try await PostgresStore.open(replica))
            }
            try await Self.reservations("postgres-1-replica", stores: [stores[0]], callers: 64, users: 100_000)
            try await Self.reservations("postgres-2-replicas", stores: stores, callers: 64, users: 100_000)
            try await Self.reservations("postgres-1-replica-batches", stores: [stores[0]], callers: 8, users: 100_000, batch: 100)
            try await Self.reservations("postgres-2-replicas-batches", stores: stores, callers: 8, users: 100_000, batch: 100)
            try await Self.reservations("postgres-2-replicas-hot-user", stores: stores, callers: 64, users: 1)
            for store in stores { await store.close() }
        }
    }
}
