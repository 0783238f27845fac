/// Version 10: the delivery policy's outcomes (issue 26, SPEC §4b).
///
/// - `outcomes.not_before`: when a WAITING device's held push is planned
///   for (NULL for every other outcome, and for rows older builds wrote).
/// - `messages.deferred_at`: when the policy first held one of the
///   message's pushes (CampaignReport's `deferred`); NULL when never.
/// - `messages_policy`: CampaignReport's `deferred` and `suppressed` counts
///   read only the messages the policy touched (a partial index: nothing
///   for the rest, and the `funnel` index is left as it is).
///
/// Self-contained: the columns are new and nullable, so an older database
/// needs no backfill.
enum SchemaV10 {
    static let sql = """
        ALTER TABLE outcomes ADD COLUMN not_before INTEGER;
        ALTER TABLE messages ADD COLUMN deferred_at INTEGER;
        CREATE INDEX messages_policy ON messages(bundle_id, campaign_id, created_at)
            WHERE deferred_at IS NOT NULL OR state = 'suppressed';
        """
}
