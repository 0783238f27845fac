import HeraldStorage

/// Version 9: the delivery event log (issue 27, SPEC §3 StreamEvents;
/// SQLite's v12), appended by triggers in the writing transaction.
///
/// - `events`: `txid` (the writing transaction, `pg_current_xact_id()`)
///   and `seq` (`events_seq`) are the cursor (`txid`, `seq`). Sequence
///   numbers are taken in allocation order but transactions commit in any
///   order, so readers order by (`txid`, `seq`) and return only rows of
///   transactions older than every one still running
///   (`txid < pg_snapshot_xmin(pg_current_snapshot())`): every
///   transaction that could still commit an event sorts after every
///   position already returned. `events_bundle` serves the reads,
///   `events_order` retention (the oldest first, every bundle).
/// - `event_horizon`: per bundle, the cursor through which retention
///   deleted events.
/// - Triggers (what appends what: see SQLite's `SchemaV12`): inserted
///   messages and outcomes once per statement through its transition table
///   (one multi-row INSERT per batch); the state, `opened_at` and
///   `deferred_at` changes per row, only when they happen (a statement
///   trigger on UPDATE cannot name columns, and would run for every claim).
///
/// Statements end with `;` at a line's end (`PostgresSchema.statements`),
/// so the function bodies keep theirs inside lines.
enum PostgresSchemaV9 {
    static let sql = """
        CREATE SEQUENCE IF NOT EXISTS events_seq;
        CREATE TABLE IF NOT EXISTS events (
            txid            xid8    NOT NULL DEFAULT pg_current_xact_id(),
            seq             bigint  NOT NULL DEFAULT nextval('events_seq'),
            bundle_id       text    NOT NULL,
            at              bigint  NOT NULL,
            kind            text    NOT NULL,
            message_id      text    NOT NULL,
            idempotency_key text,
            user_id         text    NOT NULL,
            campaign_id     text    NOT NULL,
            platform        text    NOT NULL,
            device_token    text,
            reason          text,
            http_status     integer
        );
        CREATE INDEX IF NOT EXISTS events_bundle ON events (bundle_id, txid, seq);
        CREATE INDEX IF NOT EXISTS events_order ON events (txid, seq);
        CREATE TABLE IF NOT EXISTS event_horizon (
            bundle_id    text   PRIMARY KEY,
            pruned_major bigint NOT NULL,
            pruned_minor bigint NOT NULL
        );

        CREATE OR REPLACE FUNCTION herald_events_messages_inserted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
        INSERT INTO events(bundle_id, at, kind, message_id, idempotency_key, user_id, campaign_id, platform) \
        SELECT bundle_id, created_at, state, id, idempotency_key, user_id, campaign_id, platform FROM added; \
        RETURN NULL; END $$;
        CREATE OR REPLACE FUNCTION herald_events_outcomes_inserted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
        INSERT INTO events(bundle_id, at, kind, message_id, idempotency_key, user_id, campaign_id, platform, \
        device_token, reason, http_status) \
        SELECT m.bundle_id, a.at, \(EventRows.outcomeKind("a.")), m.id, m.idempotency_key, m.user_id, m.campaign_id, \
        m.platform, a.device_token, \(EventRows.outcomeReason("a.")), a.http_status \
        FROM added a JOIN messages m ON m.id = a.message_id ORDER BY a.seq; \
        RETURN NULL; END $$;
        CREATE OR REPLACE FUNCTION herald_events_message_changed() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
        INSERT INTO events(bundle_id, at, kind, message_id, idempotency_key, user_id, campaign_id, platform) \
        VALUES (NEW.bundle_id, CASE TG_ARGV[0] WHEN 'opened' THEN NEW.opened_at ELSE NEW.updated_at END, \
        CASE TG_ARGV[0] WHEN 'state' THEN NEW.state ELSE TG_ARGV[0] END, NEW.id, NEW.idempotency_key, NEW.user_id, \
        NEW.campaign_id, NEW.platform); \
        RETURN NULL; END $$;

        DROP TRIGGER IF EXISTS events_messages_inserted ON messages;
        CREATE TRIGGER events_messages_inserted AFTER INSERT ON messages REFERENCING NEW TABLE AS added
            FOR EACH STATEMENT EXECUTE FUNCTION herald_events_messages_inserted();
        DROP TRIGGER IF EXISTS events_outcomes_inserted ON outcomes;
        CREATE TRIGGER events_outcomes_inserted AFTER INSERT ON outcomes REFERENCING NEW TABLE AS added
            FOR EACH STATEMENT EXECUTE FUNCTION herald_events_outcomes_inserted();
        DROP TRIGGER IF EXISTS events_message_state ON messages;
        CREATE TRIGGER events_message_state AFTER UPDATE OF state ON messages
            FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION herald_events_message_changed('state');
        DROP TRIGGER IF EXISTS events_message_opened ON messages;
        CREATE TRIGGER events_message_opened AFTER UPDATE OF opened_at ON messages
            FOR EACH ROW WHEN (OLD.opened_at IS NULL AND NEW.opened_at IS NOT NULL)
            EXECUTE FUNCTION herald_events_message_changed('opened');
        DROP TRIGGER IF EXISTS events_message_deferred ON messages;
        CREATE TRIGGER events_message_deferred AFTER UPDATE OF deferred_at ON messages
            FOR EACH ROW WHEN (NEW.deferred_at IS NOT NULL) EXECUTE FUNCTION herald_events_message_changed('deferred');
        """
}
