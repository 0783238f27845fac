import Foundation
import HeraldCore
import HeraldPrimitives
import Testing
@testable import HeraldStorage

/// Benchmarks, run by `bench/store.sh` (release). Skipped unless
/// `HERALD_BENCH=1`; `HERALD_BENCH_DIR` holds the database files.
@Suite("Store benchmarks", .enabled(if: ProcessInfo.processInfo.environment["HERALD_BENCH"] == "1"), .serialized, .timeLimit(.minutes(10)))
struct StoreBenchmarks {
    static var directory: String {
        ProcessInfo.processInfo.environment["HERALD_BENCH_DIR"] ?? (NSTemporaryDirectory() + "herald-bench")
    }
    static var seconds: Double {
        Double(ProcessInfo.processInfo.environment["HERALD_BENCH_SECONDS"] ?? "") ?? 5
    }
    static var pendingRows: Int {
        Int(ProcessInfo.processInfo.environment["HERALD_BENCH_PENDING"] ?? "") ?? 1_000_000
    }
    /// A request about the size of a typical accepted ScheduleRequest.
    static let request = [UInt8]((0..<600).map { UInt8(truncatingIfNeeded: $0 &* 13) })

    /// `HERALD_BENCH_IDS=v4` for random message IDs (default: UUIDv7, as
    /// `UUIDv7.make`); keys are always random (client-supplied).
    static let randomIDs = ProcessInfo.processInfo.environment["HERALD_BENCH_IDS"] == "v4"

    /// Due times as traffic makes them: now + 30 s grace, a little spread.
    static func message(_ i: Int, now: Int64) -> StoredMessage {
        var generator = SystemRandomNumberGenerator()
        let key = UUIDv4.make(using: &generator)
        let id = randomIDs
            ? UUIDv4.make(using: &generator)
            : UUIDv7.make(now: now + Int64(i / 1_000), using: &generator)
        return StoredMessage(
            id: id, bundleID: "com.example.bench", platform: .ios,
            userID: "user-\(i % 100_000)", campaignID: "campaign-\(i % 50)",
            idempotencyKey: key, deliveryMethod: .traditional, abTest: true,
            windowStart: now, windowEnd: now + 86_400_000, dueAt: now + 30_000 + Int64(i / 1_000) + Int64(i % 7),
            request: request, createdAt: now)
    }

    static func freshPath(_ name: String) throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/" + name
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        return path
    }

    static func report(_ line: String) {
        print("BENCH store \(line)")
    }

    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    /// Each of `writers` tasks schedules back to back for `seconds`.
    static func durableSchedules(writers: Int, durability: SQLiteStore.Durability) async throws {
        let path = try freshPath("schedules-\(writers)-\(durability).sqlite")
        var options = SQLiteStore.Options()
        options.durability = durability
        if let pages = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_WAL_LIMIT"] ?? "") {
            options.walLimitPages = pages
        }
        let store = try SQLiteStore(path: path, options: options)
        let clock = ContinuousClock()
        let now: Int64 = 1_800_000_000_000
        let deadline = clock.now + .milliseconds(Int(seconds * 1_000))
        let cpuBefore = cpuSeconds()
        let start = clock.now
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for w in 0..<writers {
                group.addTask {
                    var local: [Double] = []
                    var i = w
                    while clock.now < deadline {
                        let message = message(i, now: now)
                        let began = clock.now
                        _ = try await store.schedule(message)
                        let elapsed = began.duration(to: clock.now)
                        local.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1e3)
                        i += writers
                    }
                    return local
                }
            }
            var all: [Double] = []
            for try await local in group { all += local }
            return all.sorted()
        }
        let elapsed = start.duration(to: clock.now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let cpu = cpuSeconds() - cpuBefore
        let stats = store.writeStats
        await store.close()
        report(String(
            format: "schedule writers=%d durability=%@ ops=%d seconds=%.2f ops_per_s=%.0f p50_ms=%.2f p99_ms=%.2f max_ms=%.2f commits=%d ops_per_commit=%.1f wal_fsyncs=%d process_cpu_us_per_op=%.1f",
            writers, "\(durability)", latencies.count, seconds, Double(latencies.count) / seconds,
            percentile(latencies, 0.50), percentile(latencies, 0.99), latencies.last ?? 0,
            stats.commits, Double(stats.writes) / Double(max(stats.commits, 1)), stats.walSyncs,
            cpu * 1e6 / Double(max(latencies.count, 1))))
    }

    @Test func groupCommit64Writers() async throws {
        try await Self.durableSchedules(writers: 64, durability: .sqliteFull)
    }

    @Test func groupCommit64WritersPipelinedSync() async throws {
        try await Self.durableSchedules(writers: 64, durability: .pipelinedSync)
    }

    @Test func groupCommit64WritersProcessCrash() async throws {
        try await Self.durableSchedules(writers: 64, durability: .processCrash)
    }

    /// The product's RPC concurrency, not 64, sets the batch size: at
    /// 30,000 RPC/s with a few ms per commit, hundreds of writes are in flight.
    @Test func groupCommitManyWriters() async throws {
        let writers = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_WRITERS"] ?? "") ?? 256
        try await Self.durableSchedules(writers: writers, durability: .sqliteFull)
    }

    @Test func singleWriter() async throws {
        try await Self.durableSchedules(writers: 1, durability: .sqliteFull)
    }

    /// Creates the database `pendingIndexLoad` reads (run first, separately,
    /// so the load is measured in a fresh process).
    @Test func seedPending() async throws {
        guard ProcessInfo.processInfo.environment["HERALD_BENCH_SEED"] == "1" else { return }
        let path = try Self.freshPath("pending.sqlite")
        var options = SQLiteStore.Options()
        options.durability = .processCrash
        let store = try SQLiteStore(path: path, options: options)
        let now: Int64 = 1_800_000_000_000
        let clock = ContinuousClock()
        let start = clock.now
        var i = 0
        while i < Self.pendingRows {
            let count = min(20_000, Self.pendingRows - i)
            try await store.importMessages((i..<(i + count)).map { Self.message($0, now: now) })
            i += count
        }
        await store.close()
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        Self.report("seed rows=\(Self.pendingRows) seconds=\(start.duration(to: clock.now)) file_mib=\(size >> 20)")
    }

    /// Opens the seeded database and loads every pending (id, dueAt, state),
    /// as the scheduler does at start.
    @Test func pendingIndexLoad() async throws {
        guard ProcessInfo.processInfo.environment["HERALD_BENCH_LOAD"] == "1" else { return }
        let path = Self.directory + "/pending.sqlite"
        let integrity = ProcessInfo.processInfo.environment["HERALD_BENCH_QUICK_CHECK"] != "0"
        var options = SQLiteStore.Options()
        options.integrityCheckAtOpen = integrity
        let clock = ContinuousClock()
        let rssBefore = Self.rss().current
        let start = clock.now
        let store = try SQLiteStore(path: path, options: options)
        let opened = clock.now
        _ = try await store.recoverInterrupted(now: 1_800_000_000_000)
        var entries: [PendingEntry] = []
        entries.reserveCapacity(Self.pendingRows)
        try await store.forEachPendingBatch(batchSize: 10_000) { entries += $0 }
        let loaded = clock.now
        let rss = Self.rss()
        await store.close()
        Self.report("pending_load rows=\(entries.count) quick_check=\(integrity) open=\(start.duration(to: opened)) load=\(opened.duration(to: loaded)) total=\(start.duration(to: loaded)) rss_mib=\(rss.current >> 20) rss_delta_mib=\((rss.current - rssBefore) >> 20) peak_rss_mib=\(rss.peak >> 20)")
        #expect(entries.count == Self.pendingRows)
    }

    /// User + system CPU time of the whole process, in seconds.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// (VmRSS, VmHWM) in bytes, from /proc/self/status.
    static func rss() -> (current: Int, peak: Int) {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return (0, 0) }
        func field(_ name: String) -> Int {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name) }) else { return 0 }
            return (Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0) * 1_024
        }
        return (field("VmRSS:"), field("VmHWM:"))
    }
}
