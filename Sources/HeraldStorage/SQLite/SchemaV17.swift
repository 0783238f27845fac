/// Version 17: the writer keeps the counts, the campaign funnel and the
/// state events from the row changes SQLite reports (`MessageChanges`), not
/// per-row triggers (issue 27: dispatch at the provider's speed).
///
/// Every UPDATE of a message's state paid four trigger programs a row —
/// `state_counts` (two statements), `campaign_funnel` (two), the state event
/// and the funnel check — ~105k of SQLite's ~290k instructions a dispatched
/// push (`bench/sqlite-ends.sh`, bench/RESULTS.md Session 45). The writer's
/// pre-update hook copies the old and new values of the columns those
/// triggers read; after each statement the writer appends the state events
/// and fixes a stale `funnel`, and before each commit it writes the counts'
/// sums: one upsert per state and per campaign key a transaction instead of
/// two a row. `events_message_opened` and `events_message_deferred` stay:
/// they fire only on the statements that name their columns (an app report,
/// a hold), never on a push's end.
///
/// Only a connection with the hook may write `messages` from here on: every
/// write of the store goes through its writer, which installs it after the
/// migrations.
enum SchemaV17 {
    static let sql = """
        DROP TRIGGER messages_count_update;
        DROP TRIGGER messages_count_delete;
        DROP TRIGGER events_message_state;
        DROP TRIGGER messages_funnel_update;
        DROP TRIGGER campaign_funnel_update;
        DROP TRIGGER campaign_funnel_delete;
        """
}
