/// Quiet hours `HH:MM-HH:MM` in local wall time: half-open (the start is
/// inside, the end is not), wrapping midnight when the end is earlier than
/// the start (`22:00-08:00`).
public struct QuietPeriod: Sendable, Hashable, CustomStringConvertible {
    /// The first quiet minute.
    public let start: TimeOfDay
    /// The first minute no longer quiet.
    public let end: TimeOfDay

    /// The period, or nil when `start == end` (empty or whole day: ambiguous).
    public init?(start: TimeOfDay, end: TimeOfDay) {
        guard start != end else { return nil }
        self.start = start
        self.end = end
    }

    /// Parses exactly `HH:MM-HH:MM`; nil when malformed or empty.
    public init?(parsing text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let start = TimeOfDay(parsing: parts[0]), let end = TimeOfDay(parsing: parts[1]) else { return nil }
        self.init(start: start, end: end)
    }

    /// Whether it wraps midnight.
    public var wrapsMidnight: Bool { end < start }

    /// Whether a wall-clock time (ms after local midnight) is quiet.
    public func contains(millisecondsIntoDay m: Int64) -> Bool {
        let s = start.secondsIntoDay * 1000, e = end.secondsIntoDay * 1000
        return s < e ? (s <= m && m < e) : (m >= s || m < e)
    }

    /// `HH:MM-HH:MM`.
    public var description: String { "\(start)-\(end)" }
}
