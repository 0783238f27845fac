import NIOEmbedded
import Testing

@testable import GRPCEngine

/// The engine's own tally of finished calls (what the RPC metrics read at
/// scrape time): every call counted once per (method, code), its duration
/// in its method's histogram, per-loop tables summed by `snapshot()`.
@Suite("Call tally")
struct CallTallyTests {
    /// An observer that wants the tally only: `callFinished` must never run.
    struct TallyOnly: GRPCCallObserver {
        let tally: GRPCCallTally?
        var observesEachCall: Bool { false }
        func callFinished(_ call: GRPCFinishedCall) { Issue.record("callFinished called for \(call.path)") }
    }

    @Test func everyCallIsTalliedWithoutAPerCallReport() throws {
        let tally = GRPCCallTally(methodCount: 3, durationBounds: [.seconds(60)])
        let connection = try ObservedConnection(observer: TallyOnly(tally: tally))
        try connection.call("/test.Echo/Sync", message: [1])
        try connection.call("/test.Echo/Sync", message: [2, 3])
        try connection.call("/test.Echo/Fail", message: [])
        try connection.call("/test.Echo/Locked", message: [])
        try connection.call("/test.Echo/Nope")
        try connection.call("/", method: "GET", message: nil)  // plain HTTP: not a call
        let snapshot = tally.snapshot()
        #expect(snapshot.count(method: 0, code: 0) == 2)
        #expect(snapshot.count(method: 1, code: GRPCStatus.Code.notFound.rawValue) == 1)
        #expect(snapshot.count(method: 2, code: GRPCStatus.Code.unauthenticated.rawValue) == 1)
        #expect(snapshot.count(method: -1, code: GRPCStatus.Code.unimplemented.rawValue) == 1)
        #expect(snapshot.counts.reduce(0, +) == 5)
        #expect(Array(snapshot.durations(method: 0).buckets) == [2, 0])
        #expect(snapshot.durations(method: 0).sumNanoseconds > 0)
    }

    @Test func hostileIndexesAndCodesAndTablesPerLoop() {
        let tally = GRPCCallTally(methodCount: 1, durationBounds: [.microseconds(100), .milliseconds(1)])
        let first = EmbeddedEventLoop()
        let second = EmbeddedEventLoop()
        #expect(tally.table(for: first) === tally.table(for: first))
        #expect(tally.table(for: first) !== tally.table(for: second))
        tally.table(for: first).record(method: 0, code: 0, nanoseconds: 50_000)
        tally.table(for: first).record(method: 0, code: 0, nanoseconds: 100_000)  // on a bound: `le`
        tally.table(for: second).record(method: 0, code: 0, nanoseconds: 2_000_000)
        tally.record(method: 0, code: 99, nanoseconds: -5)  // not a code: UNKNOWN; negative: 0
        tally.table(for: second).record(method: 1, code: 0, nanoseconds: 0)  // not a method: ignored
        tally.table(for: second).record(method: -2, code: 0, nanoseconds: 0)
        tally.record(method: Int.max, code: -1, nanoseconds: 0)
        let snapshot = tally.snapshot()
        #expect(snapshot.count(method: 0, code: 0) == 3)
        #expect(snapshot.count(method: 0, code: GRPCStatus.Code.unknown.rawValue) == 1)
        #expect(snapshot.counts.reduce(0, +) == 4)
        #expect(Array(snapshot.durations(method: 0).buckets) == [3, 0, 1])
        #expect(snapshot.durations(method: 0).sumNanoseconds == 2_150_000)
        #expect(snapshot.durations(method: -1).buckets.allSatisfy { $0 == 0 })
    }
}
