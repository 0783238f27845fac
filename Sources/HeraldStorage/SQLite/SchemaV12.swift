/// Version 12: the delivery event log (issue 27, SPEC §3 StreamEvents).
///
/// - `events`: one row per message state change and per device outcome,
///   in the same transaction (and so the same group commit) as the change:
///   the inserted messages by `MessageInsertBatch`'s multi-row INSERT
///   beside theirs (no per-row INSERT trigger on `messages`, as since v6),
///   every other change by a trigger in the statement that makes it (no
///   write path can forget one, and the dispatcher runs no extra statement
///   per push). `seq` is the rowid: the single writer commits in `seq`
///   order, so the cursor is (`seq`, 0). Retention never deletes the
///   newest row, so a `seq` is never reused.
/// - `event_horizon`: per bundle, the cursor through which retention
///   deleted events (a cursor before it is OUT_OF_RANGE).
///
/// What appends what (`kind`):
/// - a message inserted (Schedule, `MessageInsertBatch`): its state (`scheduled`);
/// - `messages.state` changed: the new state (`superseded`, `cancelled`,
///   `handed_off`, `sent`, `displayed`, `failed`, `expired`,
///   `no_devices`, `suppressed`);
/// - `messages.opened_at` set the first time: `opened`;
/// - `messages.deferred_at` written (every applied `hold`): `deferred`;
/// - an `outcomes` row inserted (not one `ON CONFLICT DO NOTHING` skipped):
///   a device-level event, `EventRows.outcomeKind` of its status.
/// `device_removed` is appended by `removeDevice` itself (no trigger: an
/// app's own unregistration is not a dead token).
///
/// Self-contained: new tables and triggers; older rows have no events.
/// The trigger names end in the table's change, never in `insert` on
/// `messages` (InsertBatchTests pins that none is left there since v6).
enum SchemaV12 {
    static let sql = """
        CREATE TABLE events (
            seq             INTEGER PRIMARY KEY,
            bundle_id       TEXT    NOT NULL,
            at              INTEGER NOT NULL,
            kind            TEXT    NOT NULL,
            message_id      TEXT    NOT NULL,
            idempotency_key TEXT,
            user_id         TEXT    NOT NULL,
            campaign_id     TEXT    NOT NULL,
            platform        TEXT    NOT NULL,
            device_token    TEXT,
            reason          TEXT,
            http_status     INTEGER
        );
        CREATE INDEX events_bundle ON events(bundle_id, seq);

        CREATE TABLE event_horizon (
            bundle_id    TEXT    NOT NULL PRIMARY KEY,
            pruned_major INTEGER NOT NULL,
            pruned_minor INTEGER NOT NULL
        ) WITHOUT ROWID;

        CREATE TRIGGER events_message_state AFTER UPDATE OF state ON messages
            WHEN OLD.state <> NEW.state BEGIN
            INSERT INTO events(bundle_id, at, kind, message_id, idempotency_key, user_id, campaign_id, platform)
            VALUES (NEW.bundle_id, NEW.updated_at, NEW.state, NEW.id, NEW.idempotency_key, NEW.user_id,
                    NEW.campaign_id, NEW.platform);
        END;

        CREATE TRIGGER events_message_opened AFTER UPDATE OF opened_at ON messages
            WHEN OLD.opened_at IS NULL AND NEW.opened_at IS NOT NULL BEGIN
            INSERT INTO events(bundle_id, at, kind, message_id, idempotency_key, user_id, campaign_id, platform)
            VALUES (NEW.bundle_id, NEW.opened_at, 'opened', NEW.id, NEW.idempotency_key, NEW.user_id,
                    NEW.campaign_id, NEW.platform);
        END;

        CREATE TRIGGER events_message_deferred AFTER UPDATE OF deferred_at ON messages
            WHEN NEW.deferred_at IS NOT NULL BEGIN
            INSERT INTO events(bundle_id, at, kind, message_id, idempotency_key, user_id, campaign_id, platform)
            VALUES (NEW.bundle_id, NEW.updated_at, 'deferred', NEW.id, NEW.idempotency_key, NEW.user_id,
                    NEW.campaign_id, NEW.platform);
        END;

        CREATE TRIGGER events_outcome AFTER INSERT ON outcomes BEGIN
            INSERT INTO events(bundle_id, at, kind, message_id, idempotency_key, user_id, campaign_id, platform,
                               device_token, reason, http_status)
            SELECT m.bundle_id, NEW.at, \(EventRows.outcomeKind("NEW.")), m.id, m.idempotency_key, m.user_id,
                   m.campaign_id, m.platform, NEW.device_token, \(EventRows.outcomeReason("NEW.")), NEW.http_status
            FROM messages m WHERE m.id = NEW.message_id;
        END;
        """
}
