/// Version 4: the read side (GetMessage, ListMessages, CampaignReport).
///
/// - Per message, when each milestone was first reached (`handed_off_at`,
///   `sent_at`, `displayed_at`, `opened_at`): the timeline and the campaign
///   funnel, which the current state alone cannot tell (a DISPLAYED
///   context-aware message may or may not have had its fallback alert).
///   Backfilled from the outcomes older builds wrote.
/// - Per device outcome, the provider's HTTP status, the requests sent
///   (retries included) and the device's environment; NULL for old rows.
/// - `messages_user`: ListMessages by (bundle, user), newest first, as an
///   index seek with a keyset cursor on (created_at, id).
/// - `funnel`: the state and the milestones in one small integer
///   (``MessageFunnel``), kept by triggers, so CampaignReport counts groups
///   of (method, assignment, funnel) instead of evaluating a dozen
///   expressions per message.
/// - `messages_campaign`: covers CampaignReport's aggregate, in GROUP BY
///   order, so a million messages of a campaign are one index range scan
///   with no sort and no table lookup.
enum SchemaV4 {
    static let sql = """
        ALTER TABLE messages ADD COLUMN handed_off_at INTEGER;
        ALTER TABLE messages ADD COLUMN sent_at INTEGER;
        ALTER TABLE messages ADD COLUMN displayed_at INTEGER;
        ALTER TABLE messages ADD COLUMN opened_at INTEGER;

        ALTER TABLE outcomes ADD COLUMN http_status INTEGER;
        ALTER TABLE outcomes ADD COLUMN attempts INTEGER;
        ALTER TABLE outcomes ADD COLUMN environment TEXT;

        UPDATE messages SET
            handed_off_at = (SELECT min(o.at) FROM outcomes o
                             WHERE o.message_id = messages.id AND o.status = 'handed_off'),
            sent_at = (SELECT min(o.at) FROM outcomes o
                       WHERE o.message_id = messages.id
                         AND (o.status = 'sent' OR (o.status = 'unconfirmed' AND messages.state IN ('sent', 'displayed')))),
            displayed_at = (SELECT min(o.at) FROM outcomes o
                            WHERE o.message_id = messages.id AND o.status = 'displayed'),
            opened_at = (SELECT min(o.at) FROM outcomes o
                         WHERE o.message_id = messages.id AND o.status = 'opened')
        WHERE EXISTS (SELECT 1 FROM outcomes o WHERE o.message_id = messages.id);

        UPDATE messages SET last_error = 'no registered device for this user and platform when the push was due'
        WHERE state = 'no_devices' AND last_error IS NULL;

        CREATE INDEX messages_user ON messages(bundle_id, user_id, created_at, id);

        ALTER TABLE messages ADD COLUMN funnel INTEGER NOT NULL DEFAULT 0;
        UPDATE messages SET funnel = \(MessageFunnel.expression(""));

        -- Any change of the state or a milestone recomputes the funnel (the
        -- inner UPDATE touches only `funnel`, so it does not fire this again).
        CREATE TRIGGER messages_funnel_update
            AFTER UPDATE OF state, handed_off_at, sent_at, displayed_at, opened_at ON messages BEGIN
            UPDATE messages SET funnel = \(MessageFunnel.expression("NEW.")) WHERE rowid = NEW.rowid;
        END;
        -- A Schedule inserts SCHEDULED with no milestone: funnel 0, the
        -- default, and no second write. Imports of other states are fixed up.
        CREATE TRIGGER messages_funnel_insert AFTER INSERT ON messages
            WHEN NEW.funnel IS NOT \(MessageFunnel.expression("NEW.")) BEGIN
            UPDATE messages SET funnel = \(MessageFunnel.expression("NEW.")) WHERE rowid = NEW.rowid;
        END;

        CREATE INDEX messages_campaign ON messages(
            bundle_id, campaign_id, delivery_method, ab_test, funnel, created_at);
        """
}
