/// The versioned schema: migration `i` takes `PRAGMA user_version` from `i`
/// to `i + 1`. Append new migrations; never edit a shipped one.
enum Schema {
    static let migrations: [String] = [v1, v2, v3, SchemaV4.sql, SchemaV5.sql, SchemaV6.sql, SchemaV7.sql, SchemaV8.sql, SchemaV9.sql, SchemaV10.sql, SchemaV11.sql, SchemaV12.sql, SchemaV13.sql, SchemaV14.sql, SchemaV15.sql, SchemaV16.sql, SchemaV17.sql]

    /// The schema version this build writes.
    static var version: Int { migrations.count }

    /// Applies every missing migration in one `BEGIN IMMEDIATE` transaction.
    /// Throws `StoreError.newerSchema` (changing nothing) for a database
    /// written by a newer build.
    static func migrate(_ db: Database) throws {
        try db.transaction {
            let current = Int(try db.scalarInt("PRAGMA user_version") ?? 0)
            if current > version {
                throw StoreError.newerSchema(path: db.path, found: current, supported: version)
            }
            guard current < version else { return }
            for migration in migrations[current...] {
                try db.execute(migration)
            }
            try db.execute("PRAGMA user_version = \(version)")
        }
    }

    /// Version 3: device outcomes are typed (`DeviceOutcomeKind`); rows an
    /// older build wrote are mapped onto the kinds this one writes, so every
    /// stored status is one of `DeviceOutcomeKind.allKnown`:
    /// - `rejected` with reason BadDeviceToken → `bad_device_token` (the
    ///   device was dropped, like `unregistered`);
    /// - `revoke_unregistered`, `revoke_rejected`, `revoke_expired` →
    ///   `revoke_failed`, the old suffix moving to the front of the reason
    ///   (as `revoke_failed` is written now: "unregistered: Unregistered").
    static let v3 = """
        UPDATE outcomes SET status = 'bad_device_token'
        WHERE status = 'rejected' AND reason = 'BadDeviceToken';

        UPDATE outcomes SET reason = substr(status, 8) || coalesce(': ' || reason, ''), status = 'revoke_failed'
        WHERE status IN ('revoke_unregistered', 'revoke_rejected', 'revoke_expired');
        """

    /// Version 2: per-device hand-over marks and the push a resumed claim
    /// continues (SPEC §4: a push handed to APNs with no answer before a
    /// crash is UNCONFIRMED, never resent; one never handed over is sent).
    /// Messages a v1 build left mid-send have no marks, so they are resolved
    /// by v1's rule here (SENT when a device was recorded sent during that
    /// attempt, else FAILED "interrupted"): they may have reached APNs.
    static let v2 = """
        ALTER TABLE messages ADD COLUMN push_started_at INTEGER;

        UPDATE messages
        SET state = CASE WHEN EXISTS (
                SELECT 1 FROM outcomes o
                WHERE o.message_id = messages.id AND o.status = 'sent' AND o.at >= messages.sending_since
            ) THEN 'sent' ELSE 'failed' END,
            last_error = CASE WHEN EXISTS (
                SELECT 1 FROM outcomes o
                WHERE o.message_id = messages.id AND o.status = 'sent' AND o.at >= messages.sending_since
            ) THEN last_error
            ELSE 'interrupted: the process stopped while sending; not retried, to never send twice' END,
            sending_since = NULL
        WHERE sending_since IS NOT NULL;

        -- One row per device a push was handed to a connection for, written
        -- (group commit) before its HEADERS go out; `push` is the message's
        -- push_started_at, so the marks of a handoff and of its fallback differ.
        -- `transition` (the push ends) deletes them: only pushes under way.
        CREATE TABLE handovers (
            message_id   TEXT    NOT NULL REFERENCES messages(id),
            device_token TEXT    NOT NULL,
            push         INTEGER NOT NULL,
            at           INTEGER NOT NULL,
            PRIMARY KEY (message_id, device_token, push)
        ) WITHOUT ROWID;
        """

    /// Version 1: messages, the live idempotency keys, outcomes, devices,
    /// pending revokes, and per-state counters kept by triggers.
    static let v1 = """
        CREATE TABLE messages (
            id              TEXT    NOT NULL UNIQUE,
            bundle_id       TEXT    NOT NULL,
            platform        TEXT    NOT NULL,
            user_id         TEXT    NOT NULL,
            campaign_id     TEXT    NOT NULL,
            idempotency_key TEXT,
            delivery_method TEXT    NOT NULL,
            ab_test         INTEGER NOT NULL,
            window_start    INTEGER NOT NULL,
            window_end      INTEGER NOT NULL,
            due_at          INTEGER NOT NULL,
            state           TEXT    NOT NULL,
            created_at      INTEGER NOT NULL,
            updated_at      INTEGER NOT NULL,
            attempts        INTEGER NOT NULL DEFAULT 0,
            last_error      TEXT,
            apns_id         TEXT,
            -- set while a push for this message is in flight (claimed, not finished)
            sending_since   INTEGER,
            -- set when the first push for this message was claimed; never cleared:
            -- from then on the idempotency key is spent
            send_started_at INTEGER,
            -- last, so the small columns stay together at the start of the record
            request         BLOB    NOT NULL
        );

        -- The due index: small, covering (sending_since too: SQLite 3.40 does not
        -- count partial-index terms as covered), only messages waiting for an action.
        CREATE INDEX messages_due ON messages(due_at, id, state, sending_since)
            WHERE state IN ('scheduled', 'handed_off') AND sending_since IS NULL;

        -- Messages caught mid-send (normally none or few).
        CREATE INDEX messages_in_flight ON messages(sending_since)
            WHERE sending_since IS NOT NULL;

        -- The live message of each (bundle_id, idempotency_key). Superseded and
        -- older messages keep their key in `messages`; only this table is unique.
        CREATE TABLE message_keys (
            bundle_id       TEXT NOT NULL,
            idempotency_key TEXT NOT NULL,
            message_id      TEXT NOT NULL REFERENCES messages(id),
            PRIMARY KEY (bundle_id, idempotency_key)
        ) WITHOUT ROWID;

        CREATE TABLE outcomes (
            message_id   TEXT    NOT NULL REFERENCES messages(id),
            device_token TEXT    NOT NULL,
            status       TEXT    NOT NULL,
            apns_id      TEXT,
            reason       TEXT,
            at           INTEGER NOT NULL
        );
        CREATE INDEX outcomes_message ON outcomes(message_id);

        CREATE TABLE devices (
            bundle_id     TEXT    NOT NULL,
            device_token  TEXT    NOT NULL,
            platform      TEXT    NOT NULL,
            user_id       TEXT    NOT NULL,
            locale        TEXT    NOT NULL,
            timezone      TEXT    NOT NULL,
            environment   TEXT,
            registered_at INTEGER NOT NULL,
            updated_at    INTEGER NOT NULL,
            PRIMARY KEY (bundle_id, device_token)
        ) WITHOUT ROWID;
        CREATE INDEX devices_user ON devices(bundle_id, platform, user_id);

        -- Background revoke pushes owed for cancelled handed-off messages.
        CREATE TABLE revokes (
            message_id TEXT    NOT NULL PRIMARY KEY REFERENCES messages(id),
            due_at     INTEGER NOT NULL
        ) WITHOUT ROWID;

        CREATE TABLE state_counts (
            state TEXT    NOT NULL PRIMARY KEY,
            n     INTEGER NOT NULL
        ) WITHOUT ROWID;

        CREATE TRIGGER messages_count_insert AFTER INSERT ON messages BEGIN
            INSERT INTO state_counts(state, n) VALUES (NEW.state, 1)
                ON CONFLICT(state) DO UPDATE SET n = n + 1;
        END;
        CREATE TRIGGER messages_count_update AFTER UPDATE OF state ON messages
            WHEN OLD.state <> NEW.state BEGIN
            UPDATE state_counts SET n = n - 1 WHERE state = OLD.state;
            INSERT INTO state_counts(state, n) VALUES (NEW.state, 1)
                ON CONFLICT(state) DO UPDATE SET n = n + 1;
        END;
        CREATE TRIGGER messages_count_delete AFTER DELETE ON messages BEGIN
            UPDATE state_counts SET n = n - 1 WHERE state = OLD.state;
        END;
        """
}
