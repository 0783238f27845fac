/// One frequency cap, `N/PERIOD`: at most `count` counted sends in any
/// rolling `periodMilliseconds` (a send at instant s counts at t while
/// t − period < s ≤ t, so two sends exactly one period apart are allowed).
public struct FrequencyCap: Sendable, Hashable, CustomStringConvertible {
    /// The most counted sends in any period (1 … ``maximumCount``).
    public let count: Int
    /// The period in milliseconds (1 s … ``maximumPeriodMilliseconds``).
    public let periodMilliseconds: Int64

    /// The largest count accepted.
    public static let maximumCount = 1_000_000
    /// The longest period accepted: 366 days (a store keeps a user's counted
    /// sends this long at most).
    public static let maximumPeriodMilliseconds: Int64 = 366 * 86_400_000

    /// The cap, or nil when `count` or the period is out of range.
    public init?(count: Int, periodMilliseconds: Int64) {
        guard (1...Self.maximumCount).contains(count),
              (1000...Self.maximumPeriodMilliseconds).contains(periodMilliseconds) else { return nil }
        self.count = count
        self.periodMilliseconds = periodMilliseconds
    }

    /// `N/PERIOD` with the period in the largest unit that divides it
    /// exactly (`3/1d`, `10/90m`).
    public var description: String { "\(count)/\(Self.format(periodMilliseconds))" }

    /// A period as `<int>(d|h|m|s)`, the largest exact unit.
    static func format(_ milliseconds: Int64) -> String {
        let seconds = milliseconds / 1000
        for (unit, size) in [("d", Int64(86_400)), ("h", 3600), ("m", 60)] where seconds % size == 0 {
            return "\(seconds / size)\(unit)"
        }
        return "\(seconds)s"
    }
}
