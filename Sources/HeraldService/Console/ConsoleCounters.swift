import HeraldCore
import Synchronization

/// Counters the console samples (``ConsoleHistory``) and shows, kept beside
/// the Prometheus metrics (which cannot be read back cheaply): sends and
/// failures, dispatch lateness, the delivery policy's holds and
/// suppressions by reason. Atomics: no lock on the delivery path.
final class ConsoleCounters: Sendable {
    private let sends = Atomic<Int>(0)
    private let failures = Atomic<Int>(0)
    private let latenessTotal = Atomic<Int64>(0)
    private let latenessCount = Atomic<Int>(0)
    private let holds = Mutex<[HoldReason: Int]>([:])
    private let suppressions = Mutex<[SuppressReason: Int]>([:])

    /// One provider answer: "accepted" is a send, anything else a failure.
    func delivery(outcome: String) {
        if outcome == "accepted" {
            sends.wrappingAdd(1, ordering: .relaxed)
        } else {
            failures.wrappingAdd(1, ordering: .relaxed)
        }
    }

    func dispatchLateness(milliseconds: Int64) {
        latenessTotal.wrappingAdd(max(0, milliseconds), ordering: .relaxed)
        latenessCount.wrappingAdd(1, ordering: .relaxed)
    }

    func held(_ reason: HoldReason) { holds.withLock { $0[reason, default: 0] += 1 } }

    func suppressed(_ reason: SuppressReason) { suppressions.withLock { $0[reason, default: 0] += 1 } }

    /// The counters now, with the due lag given.
    func sample(dueLagMilliseconds: Int64) -> ConsoleHistory.Sample {
        ConsoleHistory.Sample(
            sends: sends.load(ordering: .relaxed), failures: failures.load(ordering: .relaxed),
            latenessTotalMilliseconds: latenessTotal.load(ordering: .relaxed), latenessCount: latenessCount.load(ordering: .relaxed),
            dueLagMilliseconds: dueLagMilliseconds)
    }

    var holdsByReason: [HoldReason: Int] { holds.withLock { $0 } }
    var suppressionsByReason: [SuppressReason: Int] { suppressions.withLock { $0 } }
}

/// The history shared by the sampling timer and the pages.
final class ConsoleHistoryCell: Sendable {
    private let history = Mutex(ConsoleHistory())

    @discardableResult
    func record(_ sample: ConsoleHistory.Sample, at milliseconds: Int64) -> ConsoleHistory.Recorded {
        history.withLock { $0.record(sample, at: milliseconds) }
    }

    func points(now: Int64) -> [ConsoleHistory.Point] { history.withLock { $0.points(now: now) } }
}
