/// Version 7: the delivery policy's outcomes (issue 26, SPEC §4b;
/// SQLite's v9): `outcomes.not_before` (a WAITING device's planned time),
/// `messages.deferred_at` (the policy first held one of its pushes) and
/// `messages_policy`, a partial index over only the messages the policy
/// held or suppressed, for CampaignReport's `deferred` and `suppressed`
/// (the generated `funnel` column and its index are left as they are).
/// New nullable columns: no backfill, no table rewrite.
enum PostgresSchemaV7 {
    static let sql = """
        ALTER TABLE outcomes ADD COLUMN IF NOT EXISTS not_before bigint;
        ALTER TABLE messages ADD COLUMN IF NOT EXISTS deferred_at bigint;
        CREATE INDEX IF NOT EXISTS messages_policy ON messages (bundle_id, campaign_id, created_at)
            WHERE deferred_at IS NOT NULL OR state = 'suppressed';
        """
}
