import CoreMetrics
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A duration histogram whose `record` takes no lock: a relaxed atomic add on
/// the bucket the value falls in and on the sum, in one of a few shards
/// picked by thread (so two event loops rarely touch one cache line). A
/// swift-metrics `TimerHandler`, rendered in the Prometheus text format beside
/// the registry's metrics.
///
/// Why not swift-prometheus' histogram on the RPC path: it takes a lock per
/// record and updates every bucket; two event loops recording every call on
/// one lock cost Health/Check ~9 % of its rate on a loaded 2-core machine
/// (bench/RESULTS.md), where the budget is 5 %.
final class LockFreeHistogram: TimerHandler, Sendable {
    /// One counter, padded to a cache line of its own.
    private final class Cell: Sendable {
        let value = Atomic<Int>(0)
        private let padding: (Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0)
    }

    static let shards = 8

    /// Upper bounds in nanoseconds, ascending; one more bucket for +Inf.
    let bounds: [Int64]
    /// The `le` labels, rendered once.
    private let boundLabels: [String]
    /// `name{labels,` rendered once.
    private let bucketPrefix: String
    private let sumLine: String
    private let countLine: String
    /// [shard * (bounds + 1) + bucket].
    private let cells: [Cell]
    /// [shard], nanoseconds.
    private let sums: [Cell]

    init(name: String, labels: [(String, String)], bounds: [Duration]) {
        self.bounds = bounds.map(\.nanoseconds)
        boundLabels = bounds.map { String(Double($0.nanoseconds) / 1e9) } + ["+Inf"]
        let rendered = labels.map { "\($0.0)=\"\($0.1)\"" }.joined(separator: ",")
        bucketPrefix = "\(name)_bucket{" + (rendered.isEmpty ? "" : rendered + ",") + "le=\""
        let suffix = rendered.isEmpty ? "" : "{\(rendered)}"
        sumLine = "\(name)_sum\(suffix) "
        countLine = "\(name)_count\(suffix) "
        cells = (0..<(Self.shards * (bounds.count + 1))).map { _ in Cell() }
        sums = (0..<Self.shards).map { _ in Cell() }
    }

    /// The calling thread's shard: a multiplicative hash of its pthread id.
    @inline(__always)
    private static func shard() -> Int {
        let id = UInt64(UInt(bitPattern: Int(bitPattern: UInt(pthread_self()))))
        return Int(truncatingIfNeeded: (id &* 0x9E37_79B9_7F4A_7C15) >> 61)
    }

    func recordNanoseconds(_ duration: Int64) {
        var index = 0
        while index < bounds.count, duration > bounds[index] { index += 1 }
        let shard = Self.shard()
        cells[shard &* (bounds.count + 1) &+ index].value.add(1, ordering: .relaxed)
        sums[shard].value.add(Int(max(0, duration)), ordering: .relaxed)
    }

    /// Appends the buckets (cumulative), the sum in seconds and the count.
    /// Read without a lock: a scrape during calls may see the sum a call
    /// ahead of the buckets; the count is the last bucket, so they agree.
    func render(into out: inout String) {
        let width = bounds.count + 1
        var cumulative = 0
        for index in 0..<width {
            for shard in 0..<Self.shards { cumulative += cells[shard * width + index].value.load(ordering: .relaxed) }
            out += bucketPrefix + boundLabels[index] + "\"} \(cumulative)\n"
        }
        let sum = sums.reduce(0) { $0 + $1.value.load(ordering: .relaxed) }
        out += sumLine + "\(Double(sum) / 1e9)\n"
        out += countLine + "\(cumulative)\n"
    }
}
