/// What a zone's clocks show at an instant: the local date and time, and
/// the local time type in effect (offset, DST, abbreviation).
public struct LocalTime: Sendable, Hashable {
    /// The local calendar date.
    public var date: LocalDate
    /// Milliseconds since local midnight, 0..<86_400_000.
    public var millisecondsIntoDay: Int64
    /// The local time type in effect.
    public var type: LocalTimeType

    /// 0–23.
    public var hour: Int { Int(millisecondsIntoDay / 3_600_000) }
    /// 0–59.
    public var minute: Int { Int(millisecondsIntoDay / 60_000 % 60) }
    /// 0–59.
    public var second: Int { Int(millisecondsIntoDay / 1000 % 60) }
    /// Seconds east of UTC.
    public var utcOffsetSeconds: Int32 { type.utcOffsetSeconds }
    /// Whether daylight saving time is in effect.
    public var isDaylightSaving: Bool { type.isDaylightSaving }
    /// The abbreviation, e.g. `CEST`.
    public var abbreviation: String { type.abbreviation }
}
