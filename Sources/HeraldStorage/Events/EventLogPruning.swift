/// A store whose delivery event log retention trims (issue 27): called by
/// the retention service after the finished messages, in bounded batches.
public protocol EventLogPruning: Sendable {
    /// Deletes at most `limit` of the oldest events, in log order, stopping
    /// at the first one not older than `cutoff` (milliseconds), in one
    /// write; moves each touched bundle's prune watermark
    /// (`DeliveryEventLog.prunedEventCursor`) to its last deleted event.
    /// Returns how many were deleted (fewer than `limit`: none is left).
    func pruneEvents(before cutoff: Int64, limit: Int) async throws -> Int
}
