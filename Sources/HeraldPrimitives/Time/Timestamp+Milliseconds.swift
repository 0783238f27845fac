/// The store and the scheduler count milliseconds since the epoch (their
/// column and wire form); in code an instant is a ``Timestamp``.
extension Timestamp {
    /// `milliseconds` since 1970-01-01T00:00:00Z (may be negative).
    public init(milliseconds: Int64) {
        let (seconds, remainder) = milliseconds.quotientAndRemainder(dividingBy: 1000)
        self.init(seconds: seconds, nanoseconds: Int32(remainder) * 1_000_000)
    }

    /// Whole milliseconds since 1970 (truncated within the second).
    public var milliseconds: Int64 {
        seconds * 1000 + Int64(nanoseconds / 1_000_000)
    }
}
