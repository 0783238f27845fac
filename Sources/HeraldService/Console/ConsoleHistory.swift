/// The last hour of delivery figures at 10 s resolution (360 points), kept
/// in memory for the console's charts (a restart loses them).
///
/// A state machine over samples of cumulative counters: each
/// ``record(_:at:)`` in a new 10 s step turns the difference from the
/// previous sample into one ``Point``; a second sample in the same step, or
/// one from the past, is ignored; a counter that went down (a reset) counts
/// as zero. Memory is bounded: a ring of ``capacity`` points.
struct ConsoleHistory: Sendable {
    static let stepMilliseconds: Int64 = 10_000
    static let capacity = 360

    /// Counters as read at one instant (cumulative since start), and the
    /// due lag then (a gauge).
    struct Sample: Sendable, Equatable {
        var sends = 0
        var failures = 0
        var latenessTotalMilliseconds: Int64 = 0
        var latenessCount = 0
        var dueLagMilliseconds: Int64 = 0
    }

    /// One 10 s step.
    struct Point: Sendable, Equatable {
        /// The step's start (ms since the epoch, a multiple of 10 s).
        var at: Int64
        var sends: Int
        var failures: Int
        /// Mean dispatch lateness of the step's dispatches; nil when none.
        var meanLatenessMilliseconds: Double?
        var dueLagMilliseconds: Int64
    }

    /// What a sample did.
    enum Recorded: Equatable {
        /// The first sample: the baseline for the next.
        case baseline
        case point(Point)
        /// Same step as the last sample, or earlier: nothing changed.
        case ignored
    }

    private var ring: [Point] = []
    private var next = 0
    private var last: (step: Int64, sample: Sample)?

    init() { ring.reserveCapacity(Self.capacity) }

    mutating func record(_ sample: Sample, at milliseconds: Int64) -> Recorded {
        let step = milliseconds / Self.stepMilliseconds
        guard let previous = last else {
            last = (step, sample)
            return .baseline
        }
        guard step > previous.step else { return .ignored }
        last = (step, sample)
        let old = previous.sample
        let dispatches = max(0, sample.latenessCount - old.latenessCount)
        let lateness = max(0, sample.latenessTotalMilliseconds - old.latenessTotalMilliseconds)
        let point = Point(
            at: step * Self.stepMilliseconds,
            sends: max(0, sample.sends - old.sends),
            failures: max(0, sample.failures - old.failures),
            meanLatenessMilliseconds: dispatches == 0 ? nil : Double(lateness) / Double(dispatches),
            dueLagMilliseconds: sample.dueLagMilliseconds)
        if ring.count < Self.capacity {
            ring.append(point)
        } else {
            ring[next] = point
        }
        next = (next + 1) % Self.capacity
        return .point(point)
    }

    /// The points of the hour before `now`, oldest first.
    func points(now: Int64) -> [Point] {
        let ordered = ring.count < Self.capacity ? ring : Array(ring[next...] + ring[..<next])
        let from = now - Int64(Self.capacity) * Self.stepMilliseconds
        return ordered.filter { $0.at > from && $0.at <= now }
    }

    var count: Int { ring.count }
}
