/// The read side's bounds (`serve --max-concurrent-reads`,
/// `--max-queued-reads`, `--read-timeout`; docs/SECURITY.md "Reads and
/// writes").
public struct ReadSideLimits: Sendable, Hashable {
    /// GetMessage, ListMessages and CampaignReport calls reading at once;
    /// also the store's capacity kept for them: SQLite reader threads,
    /// PostgreSQL connections of the read pool (apart from the 16 that
    /// Schedule, claims and ends use, and the lease renewal's own).
    public var maxConcurrent = 8
    /// Calls waiting for a place; any beyond is RESOURCE_EXHAUSTED at once.
    public var maxQueued = 64
    /// How long one read may run in the store before it is stopped
    /// (SQLite: interrupted; PostgreSQL: `statement_timeout`), answered
    /// RESOURCE_EXHAUSTED naming the setting.
    public var timeout: Duration = .seconds(5)
    /// StreamEvents calls open at once; any beyond is RESOURCE_EXHAUSTED.
    /// Each reads one page at a time, outside the bound above.
    public var maxEventStreams = 128

    public init() {}
}
