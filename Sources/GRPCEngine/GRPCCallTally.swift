import NIOCore
import Synchronization

/// Counts of finished calls per (method, status code) and a duration
/// histogram per method, kept by the engine itself: every event loop records
/// into a table of its own (one writer: a plain load and store per cell, no
/// lock, no read-modify-write), and `snapshot()` sums the tables when asked
/// (a metrics scrape). Exact: every finished call is in the next snapshot.
///
/// Why not a metrics call per RPC through the observer: building a
/// `GRPCFinishedCall`, a swift-metrics counter through its existential and an
/// atomic histogram cost Health/Check ~700 instructions a call (~3 %).
public final class GRPCCallTally: Sendable {
    /// The gRPC status codes a call can end with (0...16); others count as UNKNOWN.
    public static let codeCount = 17

    /// Methods tallied: rows 1...methodCount are the engine's method indexes
    /// (`GRPCFinishedCall.method`) + 1; row 0 is paths that matched none.
    public let methodCount: Int
    /// Histogram upper bounds in nanoseconds, ascending; one more bucket (+Inf).
    public let bounds: [Int64]
    private let tables = Mutex<[ObjectIdentifier: (loop: any EventLoop, table: Table)]>([:])
    /// Records of `record(method:code:nanoseconds:)` (any thread, under `lock`).
    private let lockedTable: Table
    private let lock = Mutex(())

    /// - Parameters:
    ///   - methodCount: how many methods the server registers.
    ///   - durationBounds: the histogram's upper bounds, ascending.
    public init(methodCount: Int, durationBounds: [Duration]) {
        let bounds = durationBounds.map { $0.components.seconds &* 1_000_000_000 &+ $0.components.attoseconds / 1_000_000_000 }
        self.methodCount = methodCount
        self.bounds = bounds
        lockedTable = Table(rows: methodCount + 1, bounds: bounds, writer: nil)
    }

    /// The table the connections of `loop` record into (made on first use).
    func table(for loop: any EventLoop) -> Table {
        tables.withLock { tables in
            if let entry = tables[ObjectIdentifier(loop)] { return entry.table }
            let table = Table(rows: methodCount + 1, bounds: bounds, writer: loop)
            tables[ObjectIdentifier(loop)] = (loop, table)
            return table
        }
    }

    /// Records one finished call from any thread (takes a lock; the engine's
    /// loops use their own tables instead).
    public func record(method: Int, code: Int, nanoseconds: Int64) {
        lock.withLock { _ in lockedTable.record(method: method, code: code, nanoseconds: nanoseconds) }
    }

    /// Everything recorded so far, summed over the loops.
    public func snapshot() -> GRPCCallTallySnapshot {
        var snapshot = GRPCCallTallySnapshot(methodCount: methodCount, bounds: bounds)
        let all = tables.withLock { $0.values.map { $0.table } } + [lockedTable]
        for table in all { table.add(to: &snapshot) }
        return snapshot
    }

    /// One loop's cells: [row * 17 + code] counts, then [row * (bounds + 1) +
    /// bucket] histogram buckets (not cumulative), then [row] sums in
    /// nanoseconds. Written by one thread; read by any through atomics.
    final class Table: @unchecked Sendable {
        // @unchecked: the cells are atomics in memory this object owns; one
        // thread writes them (plain load + store, exact with one writer):
        // `writer`'s, asserted on every record in debug builds.
        let rows: Int
        /// The loop whose thread is the one writer (nil: writes are serialized by the tally's lock).
        private let writer: (any EventLoop)?
        private let boundCount: Int
        private let boundValues: UnsafeMutablePointer<Int64>
        private let cells: UnsafeMutablePointer<Atomic<Int>>
        private let bucketBase: Int
        private let sumBase: Int
        private let cellCount: Int

        init(rows: Int, bounds: [Int64], writer: (any EventLoop)?) {
            let bucketBase = rows * GRPCCallTally.codeCount
            let sumBase = bucketBase + rows * (bounds.count + 1)
            let cells = UnsafeMutablePointer<Atomic<Int>>.allocate(capacity: sumBase + rows)
            for index in 0..<(sumBase + rows) { (cells + index).initialize(to: Atomic(0)) }
            let boundValues = UnsafeMutablePointer<Int64>.allocate(capacity: max(1, bounds.count))
            for (index, bound) in bounds.enumerated() { (boundValues + index).initialize(to: bound) }
            self.rows = rows
            self.writer = writer
            self.boundCount = bounds.count
            self.boundValues = boundValues
            self.bucketBase = bucketBase
            self.sumBase = sumBase
            self.cellCount = sumBase + rows
            self.cells = cells
        }

        deinit {
            cells.deinitialize(count: cellCount)
            cells.deallocate()
            boundValues.deallocate()
        }

        /// One finished call; only ever from the table's one writer.
        @inline(__always)
        func record(method: Int, code: Int, nanoseconds: Int64) {
            assert(writer?.inEventLoop ?? true, "a call tally table was written off its event loop")
            let row = method &+ 1
            guard row >= 0, row < rows else { return }
            let column = code >= 0 && code < GRPCCallTally.codeCount ? code : 2  // UNKNOWN
            add(row &* GRPCCallTally.codeCount &+ column, 1)
            var bucket = 0
            while bucket < boundCount, nanoseconds > boundValues[bucket] { bucket &+= 1 }
            add(bucketBase &+ row &* (boundCount &+ 1) &+ bucket, 1)
            add(sumBase &+ row, Int(max(0, nanoseconds)))
        }

        @inline(__always)
        private func add(_ index: Int, _ amount: Int) {
            let cell = cells + index
            cell.pointee.store(cell.pointee.load(ordering: .relaxed) &+ amount, ordering: .relaxed)
        }

        private func value(_ index: Int) -> Int { (cells + index).pointee.load(ordering: .relaxed) }

        func add(to snapshot: inout GRPCCallTallySnapshot) {
            for index in 0..<bucketBase { snapshot.counts[index] += value(index) }
            for index in 0..<(sumBase - bucketBase) { snapshot.buckets[index] += value(bucketBase + index) }
            for index in 0..<rows { snapshot.sums[index] += value(sumBase + index) }
        }
    }
}

/// What a `GRPCCallTally` holds at one moment, summed over its tables.
public struct GRPCCallTallySnapshot: Sendable {
    /// Rows are method index + 1 (row 0: no method matched).
    public let rows: Int
    /// Histogram upper bounds in nanoseconds (one more bucket: +Inf).
    public let bounds: [Int64]
    /// Calls per [row * 17 + code].
    public var counts: [Int]
    /// Calls per [row * (bounds.count + 1) + bucket], not cumulative.
    public var buckets: [Int]
    /// Summed durations in nanoseconds per [row].
    public var sums: [Int]

    init(methodCount: Int, bounds: [Int64]) {
        rows = methodCount + 1
        self.bounds = bounds
        counts = Array(repeating: 0, count: rows * GRPCCallTally.codeCount)
        buckets = Array(repeating: 0, count: rows * (bounds.count + 1))
        sums = Array(repeating: 0, count: rows)
    }

    /// Calls of `method` (-1: no method matched) that ended with `code`.
    public func count(method: Int, code: Int) -> Int { counts[(method + 1) * GRPCCallTally.codeCount + code] }

    /// The histogram of `method`: per bucket (not cumulative) and the sum.
    public func durations(method: Int) -> (buckets: ArraySlice<Int>, sumNanoseconds: Int) {
        let width = bounds.count + 1
        let row = method + 1
        return (buckets[row * width..<(row + 1) * width], sums[row])
    }
}
