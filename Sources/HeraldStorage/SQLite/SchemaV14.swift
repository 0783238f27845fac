/// Version 14: a campaign's counts kept as they change (issue 29: the
/// console's campaign page within 50 ms on a campaign of 500,000).
///
/// CampaignReport over a whole campaign counted every one of its messages
/// in `messages_campaign` — one index entry a message, 116 ms for 500,000
/// (SQLite's B-trees keep no subtree counts). `campaign_funnel` holds, per
/// (bundle, campaign, delivery method, A/B assignment, funnel, policy),
/// how many messages are there now, so a report with no time range reads a
/// few dozen rows (`SQLiteStore.campaignCounts`). `policy` says what
/// `messages_policy` says per message: bit 0 when the policy held one of its
/// pushes (`deferred_at`), bit 1 when it is SUPPRESSED.
///
/// It stays exact on every write path: `MessageInsertBatch` counts what it
/// inserts (a Schedule, an import: one upsert per batch, as `state_counts`;
/// no INSERT trigger on `messages` since v6), and triggers follow every
/// other change — the transition's own UPDATE, `messages_funnel_update`'s
/// fix-up, retention's DELETE, a moved campaign — each moving one count
/// from the old row's key to the new one's. A change that keeps the key (most
/// updates of a message's other columns) is skipped by the WHEN. A report
/// with a time range still counts the index, which can tell creation times.
///
/// Backfilled from `messages` in one scan of `messages_campaign`.
enum SchemaV14 {
    static func policy(_ row: String) -> String {
        "((\(row)deferred_at IS NOT NULL) + 2 * (\(row)state = 'suppressed'))"
    }

    static func key(_ row: String) -> String {
        "\(row)bundle_id, \(row)campaign_id, \(row)delivery_method, \(row)ab_test, \(row)funnel, \(policy(row))"
    }

    static func add(_ row: String) -> String {
        """
        INSERT INTO campaign_funnel(bundle_id, campaign_id, delivery_method, ab_test, funnel, policy, n)
            VALUES (\(key(row)), 1) ON CONFLICT DO UPDATE SET n = n + 1;
        """
    }

    static let remove = """
        UPDATE campaign_funnel SET n = n - 1
            WHERE bundle_id = OLD.bundle_id AND campaign_id = OLD.campaign_id AND delivery_method = OLD.delivery_method
              AND ab_test = OLD.ab_test AND funnel = OLD.funnel AND policy = \(policy("OLD."));
        """

    static let sql = """
        CREATE TABLE campaign_funnel (
            bundle_id       TEXT    NOT NULL,
            campaign_id     TEXT    NOT NULL,
            delivery_method TEXT    NOT NULL,
            ab_test         INTEGER NOT NULL,
            funnel          INTEGER NOT NULL,
            policy          INTEGER NOT NULL,
            n               INTEGER NOT NULL,
            PRIMARY KEY (bundle_id, campaign_id, delivery_method, ab_test, funnel, policy)
        ) WITHOUT ROWID;

        INSERT INTO campaign_funnel(bundle_id, campaign_id, delivery_method, ab_test, funnel, policy, n)
            SELECT \(key("")), count(*) FROM messages GROUP BY 1, 2, 3, 4, 5, 6;

        CREATE TRIGGER campaign_funnel_delete AFTER DELETE ON messages BEGIN
            \(remove)
        END;
        CREATE TRIGGER campaign_funnel_update
            AFTER UPDATE OF bundle_id, campaign_id, delivery_method, ab_test, funnel, deferred_at, state ON messages
            WHEN OLD.funnel IS NOT NEW.funnel OR \(policy("OLD.")) IS NOT \(policy("NEW."))
              OR OLD.campaign_id IS NOT NEW.campaign_id OR OLD.delivery_method IS NOT NEW.delivery_method
              OR OLD.ab_test IS NOT NEW.ab_test OR OLD.bundle_id IS NOT NEW.bundle_id BEGIN
            \(remove)
            \(add("NEW."))
        END;
        """
}
