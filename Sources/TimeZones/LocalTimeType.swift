/// One local time type of a zone: its offset from UTC, whether it is
/// daylight saving time, and its abbreviation (`EST`, `CEST`, `+1030`).
public struct LocalTimeType: Sendable, Hashable {
    /// Seconds east of UTC (New York in winter: −18000).
    public var utcOffsetSeconds: Int32
    /// Whether this is daylight saving (summer) time.
    public var isDaylightSaving: Bool
    /// The designation, e.g. `EDT`.
    public var abbreviation: String

    /// Creates a local time type.
    public init(utcOffsetSeconds: Int32, isDaylightSaving: Bool, abbreviation: String) {
        self.utcOffsetSeconds = utcOffsetSeconds
        self.isDaylightSaving = isDaylightSaving
        self.abbreviation = abbreviation
    }
}
