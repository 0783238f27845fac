extension ZoneRules {
    /// UTC: offset 0, no transitions, built in memory (no file read). The
    /// zone of last resort (SPEC §4b: a device's zone, else its policy's,
    /// else UTC).
    public static let utc = ZoneRules(
        name: "UTC",
        block: TZif.DataBlock(
            transitions: [], transitionTypes: [],
            types: [LocalTimeType(utcOffsetSeconds: 0, isDaylightSaving: false, abbreviation: "UTC")]),
        footer: nil)
}
