import CoreMetrics
public import HeraldCore

import GRPCEngine
public import Prometheus
public import PushProviders
import Synchronization

/// Herald's Prometheus metrics, made through swift-metrics with this
/// instance's own `PrometheusMetricsFactory` (no process-global bootstrap, so
/// several servers in one process keep their own figures).
///
/// The RPC metrics cost a call nothing beyond the engine's own tally (see
/// `RPCMetricsTable`): they are folded in when scraped.
public final class HeraldMetrics: DeliveryMetrics, Sendable {
    /// The collector `/metrics` renders.
    public let registry: PrometheusCollectorRegistry
    let factory: PrometheusMetricsFactory

    private let lateness: CoreMetrics.Timer
    private let storeCommit: CoreMetrics.Timer
    private let oldestDueLag: CoreMetrics.Gauge
    private let messageGauges: [String: CoreMetrics.Gauge]
    private let providerDurations: [String: CoreMetrics.Timer]
    /// Made on first use: outcomes and endpoints are open sets (off the RPC path).
    private let deliveries = Mutex<[String: CoreMetrics.Counter]>([:])
    private let connections = Mutex<[String: CoreMetrics.Gauge]>([:])
    private let inFlight = Mutex<[String: CoreMetrics.Gauge]>([:])
    /// Per (service, route, reason): the counter and the pools' total it was last brought to.
    private let authFailures = Mutex<[String: (counter: CoreMetrics.Counter, seen: Int)]>([:])
    private let ready: CoreMetrics.Gauge
    private let storeWritable: CoreMetrics.Gauge
    /// Read at each render: `herald_ready` is what `/readyz` would say then.
    private let servingState = Mutex<ServingStateCell?>(nil)
    /// Made on the first disk reading: a store without a data directory
    /// (PostgreSQL) has no such gauges rather than a zero that reads as a full disk.
    private let dataDirectory = Mutex<(available: CoreMetrics.Gauge, size: CoreMetrics.Gauge)?>(nil)
    private let rpcTables = Mutex<[RPCMetricsTable]>([])
    private let throttleWait: CoreMetrics.Timer
    private let policyHolds: [HoldReason: CoreMetrics.Counter]
    private let policySuppressions: [SuppressReason: CoreMetrics.Counter]
    /// What the operator console samples and shows.
    let console = ConsoleCounters()

    static let rpcBuckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
    ]
    static let secondsBuckets: [Duration] = [
        .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500),
        .seconds(5), .seconds(10), .seconds(30), .seconds(60), .seconds(300),
    ]

    /// - Parameter states: the message states `herald_messages` reports.
    public init(states: [String]) {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = Self.secondsBuckets
        factory.durationHistogramBuckets["herald_store_commit_duration_seconds"] = Self.rpcBuckets
        self.registry = registry
        self.factory = factory
        lateness = CoreMetrics.Timer(label: "herald_dispatch_lateness_seconds", factory: factory)
        storeCommit = CoreMetrics.Timer(label: "herald_store_commit_duration_seconds", factory: factory)
        oldestDueLag = CoreMetrics.Gauge(label: "herald_oldest_due_lag_seconds", factory: factory)
        ready = CoreMetrics.Gauge(label: "herald_ready", factory: factory)
        storeWritable = CoreMetrics.Gauge(label: "herald_store_writable", factory: factory)
        var gauges: [String: CoreMetrics.Gauge] = [:]
        for state in states {
            gauges[state] = CoreMetrics.Gauge(label: "herald_messages", dimensions: [("state", state)], factory: factory)
        }
        messageGauges = gauges
        var providers: [String: CoreMetrics.Timer] = [:]
        for service in ["apns", "fcm"] {
            providers[service] = CoreMetrics.Timer(
                label: "herald_provider_request_duration_seconds", dimensions: [("service", service)], factory: factory)
        }
        providerDurations = providers
        throttleWait = CoreMetrics.Timer(label: "herald_throttle_wait_seconds", factory: factory)
        var holds: [HoldReason: CoreMetrics.Counter] = [:]
        for reason in HoldReason.allCases {
            holds[reason] = CoreMetrics.Counter(label: "herald_policy_holds_total", dimensions: [("reason", reason.rawValue)], factory: factory)
        }
        policyHolds = holds
        var suppressions: [SuppressReason: CoreMetrics.Counter] = [:]
        for reason in SuppressReason.allCases {
            suppressions[reason] = CoreMetrics.Counter(
                label: "herald_policy_suppressed_total", dimensions: [("reason", reason.rawValue)], factory: factory)
        }
        policySuppressions = suppressions
    }

    /// Throttled pushes taken from the due index this long after they were due.
    public func throttleWaited(milliseconds: [Int64]) {
        for wait in milliseconds { throttleWait.recordMilliseconds(max(0, wait)) }
    }

    /// A device's push held by the delivery policy.
    public func policyHeld(_ reason: HoldReason) {
        policyHolds[reason]?.increment()
        console.held(reason)
    }

    /// A device's push withheld for good by the delivery policy.
    public func policySuppressed(_ reason: SuppressReason) {
        policySuppressions[reason]?.increment()
        console.suppressed(reason)
    }

    // MARK: Recording

    /// One provider request's result for one device.
    public func delivery(service: String, outcome: String, duration: Duration) {
        providerDurations[service]?.recordNanoseconds(duration.nanoseconds)
        let key = service + "\u{0}" + outcome
        let counter = deliveries.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = CoreMetrics.Counter(
                label: "herald_deliveries_total", dimensions: [("service", service), ("outcome", outcome)], factory: factory)
            counters[key] = counter
            return counter
        }
        counter.increment()
        console.delivery(outcome: outcome)
    }

    /// A due message went out `milliseconds` after it was due.
    func dispatchLateness(milliseconds: Int64) {
        lateness.recordMilliseconds(max(0, milliseconds))
        console.dispatchLateness(milliseconds: milliseconds)
    }

    func storeCommitted(_ duration: Duration) {
        storeCommit.recordNanoseconds(duration.nanoseconds)
    }

    /// The background refresh: counts by state, lag, provider connections.
    func refresh(_ snapshot: OperatorSnapshot) {
        for (state, gauge) in messageGauges {
            gauge.record(snapshot.counts.first { $0.key.rawValue == state }?.value ?? 0)
        }
        oldestDueLag.record(Double(snapshot.oldestDueLagMilliseconds) / 1000)
        for pool in snapshot.pools {
            let key = pool.service + "\u{0}" + pool.endpoint
            let gauge = connections.withLock { gauges in
                if let gauge = gauges[key] { return gauge }
                let gauge = CoreMetrics.Gauge(
                    label: "herald_provider_connections", dimensions: [("service", pool.service), ("endpoint", pool.endpoint)],
                    factory: factory)
                gauges[key] = gauge
                return gauge
            }
            gauge.record(pool.connectionsOpen)
        }
        var streams: [String: (service: String, endpoint: String, count: Int)] = [:]
        var refusals: [String: (service: String, route: String, reason: String, count: Int)] = [:]
        for pool in snapshot.pools {
            let endpointKey = pool.service + "\u{0}" + pool.endpoint
            streams[endpointKey, default: (pool.service, pool.endpoint, 0)].count += pool.streamsInFlight
            for (reason, count) in pool.authFailures {
                let key = pool.service + "\u{0}" + pool.route + "\u{0}" + reason
                refusals[key, default: (pool.service, pool.route, reason, 0)].count += count
            }
        }
        for (key, stream) in streams {
            let gauge = inFlight.withLock { gauges in
                if let gauge = gauges[key] { return gauge }
                let gauge = CoreMetrics.Gauge(
                    label: "herald_provider_streams_in_flight",
                    dimensions: [("service", stream.service), ("endpoint", stream.endpoint)], factory: factory)
                gauges[key] = gauge
                return gauge
            }
            gauge.record(stream.count)
        }
        authFailures.withLock { counters in
            for (key, refusal) in refusals {
                let entry = counters[key] ?? (CoreMetrics.Counter(
                    label: "herald_provider_auth_failures_total",
                    dimensions: [("service", refusal.service), ("route", refusal.route), ("reason", refusal.reason)],
                    factory: factory), 0)
                // The pools' counts only grow; a pool replaced by a reload starts again from 0.
                if refusal.count > entry.seen { entry.counter.increment(by: refusal.count - entry.seen) }
                counters[key] = (entry.counter, refusal.count)
            }
        }
    }

    /// `herald_ready` and `herald_store_writable` follow `state` from now on
    /// (read when `/metrics` is rendered).
    func follow(_ state: ServingStateCell) {
        servingState.withLock { $0 = state }
    }

    /// The store probe's reading of the data directory's file system, about
    /// once a second (nil: no data directory to watch, or `statvfs` failed).
    func probed(disk: DiskSpace?) {
        guard let disk else { return }
        let gauges = dataDirectory.withLock { gauges in
            if let gauges { return gauges }
            let made = (
                available: CoreMetrics.Gauge(label: "herald_data_dir_available_bytes", factory: factory),
                size: CoreMetrics.Gauge(label: "herald_data_dir_size_bytes", factory: factory))
            gauges = made
            return made
        }
        gauges.available.record(disk.availableBytes)
        gauges.size.record(disk.sizeBytes)
    }

    /// The per-call tables of the RPC metrics, for the engine's methods
    /// (rendered with the rest from then on).
    func rpcTable(methods: [String]) -> RPCMetricsTable {
        let table = RPCMetricsTable(methods: methods, factory: factory)
        rpcTables.withLock { $0.append(table) }
        return table
    }

    /// The Prometheus text exposition of every metric: the RPC tallies
    /// folded into the registry's counters, the registry's metrics, then the
    /// RPC duration histograms (from the same snapshot as the counters).
    public func render() -> [UInt8] {
        if let readiness = servingState.withLock({ $0 })?.readiness {
            ready.record(readiness.isReady ? 1 : 0)
            storeWritable.record(readiness.storeWritable ? 1 : 0)
        }
        let tables = rpcTables.withLock { $0 }
        let snapshots = tables.map { $0.tally.snapshot() }
        for (table, snapshot) in zip(tables, snapshots) { table.fold(snapshot) }
        var buffer = registry.emitToBuffer()
        var text = ""
        for (table, snapshot) in zip(tables, snapshots) { table.render(snapshot, into: &text) }
        buffer.append(contentsOf: text.utf8)
        return buffer
    }
}

extension Duration {
    /// Whole nanoseconds (what the histograms take).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
    }
}

/// The RPC metrics of one server's methods. The engine tallies every call
/// per event loop (`GRPCCallTally`: no metrics call per RPC); a scrape folds
/// the tally in: `herald_rpc_requests_total{method,code}` (swift-metrics
/// counters, incremented by what was tallied since the last scrape) and
/// `herald_rpc_duration_seconds{method}` (rendered from the tally).
final class RPCMetricsTable: Sendable {
    /// Method names (`pkg.Service/Method`), index 0 for paths that matched none.
    let methodNames: [String]
    /// What the engine records into (the observer hands it over).
    let tally: GRPCCallTally
    /// `herald_rpc_requests_total{method,code}`: [(method index + 1) * 17 + code].
    private let counters: [CoreMetrics.Counter]
    /// The tally's counts already added to `counters`.
    private let folded: Mutex<[Int]>
    /// The `le` labels of the duration buckets, rendered once.
    private let boundLabels: [String]
    /// Per method: `name_bucket{method="…",le="`, `name_sum{…} `, `name_count{…} `.
    private let histogramLines: [(bucket: String, sum: String, count: String)]

    init(methods: [String], factory: PrometheusMetricsFactory) {
        let names = ["unknown"] + methods.map { $0.hasPrefix("/") ? String($0.dropFirst()) : $0 }
        methodNames = names
        tally = GRPCCallTally(methodCount: methods.count, durationBounds: HeraldMetrics.rpcBuckets)
        counters = names.flatMap { method in
            (0..<GRPCCallTally.codeCount).map { code in
                CoreMetrics.Counter(
                    label: "herald_rpc_requests_total",
                    dimensions: [("method", method), ("code", GRPCStatus.Code(rawValue: code).name)], factory: factory)
            }
        }
        folded = Mutex(Array(repeating: 0, count: names.count * GRPCCallTally.codeCount))
        boundLabels = HeraldMetrics.rpcBuckets.map { String(Double($0.nanoseconds) / 1e9) } + ["+Inf"]
        let name = "herald_rpc_duration_seconds"
        histogramLines = names.map { method in
            ("\(name)_bucket{method=\"\(method)\",le=\"", "\(name)_sum{method=\"\(method)\"} ",
             "\(name)_count{method=\"\(method)\"} ")
        }
    }

    /// One finished RPC, recorded from outside the engine's loops (takes a
    /// lock; the engine records into the tally's per-loop tables).
    func record(method: Int, code: Int, nanoseconds: Int64) {
        tally.record(method: method, code: code, nanoseconds: nanoseconds)
    }

    /// Adds what `snapshot` counted since the last fold to the counters.
    func fold(_ snapshot: GRPCCallTallySnapshot) {
        folded.withLock { folded in
            for index in folded.indices where snapshot.counts[index] > folded[index] {
                counters[index].increment(by: snapshot.counts[index] - folded[index])
                folded[index] = snapshot.counts[index]
            }
        }
    }

    /// The duration histograms of `snapshot` in the Prometheus text format.
    func render(_ snapshot: GRPCCallTallySnapshot, into out: inout String) {
        out += "# TYPE herald_rpc_duration_seconds histogram\n"
        for (row, lines) in histogramLines.enumerated() {
            let (buckets, sum) = snapshot.durations(method: row - 1)
            var cumulative = 0
            for (label, count) in zip(boundLabels, buckets) {
                cumulative += count
                out += lines.bucket + label + "\"} \(cumulative)\n"
            }
            out += lines.sum + "\(Double(sum) / 1e9)\n"
            out += lines.count + "\(cumulative)\n"
        }
    }

    func methodName(_ method: Int) -> String {
        let row = method + 1
        return row >= 0 && row < methodNames.count ? methodNames[row] : "unknown"
    }
}
