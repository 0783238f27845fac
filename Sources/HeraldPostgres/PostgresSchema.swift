import HeraldStorage
import Logging
import PostgresNIO

/// The versioned PostgreSQL schema: migration `i` takes the database from
/// version `i` to `i + 1`, recorded as a row of `herald_schema`. Append new
/// migrations; never edit a shipped one.
///
/// Migrations run at start in one transaction under a transaction-scoped
/// advisory lock, so replicas starting together apply them once: the others
/// wait for the lock, then find the version current. A database with a newer
/// version than this build knows is refused, changing nothing.
///
/// Identifiers and tokens use the "C" collation: they sort by bytes, as in
/// SQLite, whatever the database's locale (keyset cursors depend on it).
///
/// Design (the same rules as `SQLiteStore`, see `HeraldStore`'s notes):
/// - Foreign keys to `messages` are checked at commit (`DEFERRABLE
///   INITIALLY DEFERRED`): Schedule takes its key before it inserts the
///   message, and retention deletes a message before its children, each in
///   one transaction. (The check's KEY SHARE lock does not conflict with
///   the updates of a message's state.) Since v2 only `revokes` has one:
///   `outcomes` and `handovers` get a row per device per push, and their
///   checks (a trigger, an index probe and a row lock each, at commit) were
///   13 % of the server's CPU while two replicas dispatched; `message_keys`
///   gets one per Schedule, and its check was 12 % of the server's CPU
///   under durable Schedules. Their rows are written only for messages that
///   exist (a key in the transaction that inserts its message, a push's end
///   fenced on its message's row, a mark after a claim, a report after
///   finding its message) and retention deletes them with their message.
/// - `message_keys` holds the live message of each (bundle, key), as in
///   SQLite: its primary key is the uniqueness, and its row lock serializes
///   concurrent Schedules of one key across replicas.
/// - Claims record `owner` (replica) and `lease_until`; `messages_leases`
///   finds expired leases (the multi-replica takeover).
/// - `funnel` is a generated column (state and milestones in one small
///   integer, see `MessageFunnel`) so CampaignReport reads one index.
/// - No counter rows: Status counts active states from a partial index and
///   estimates finished states from the planner's statistics on big tables
///   (`PostgresStore.countsByState`).
enum PostgresSchema {
    static let migrations: [String] = [v1, v2, v3, v4, v5, v6, PostgresSchemaV7.sql, PostgresSchemaV8.sql, PostgresSchemaV9.sql]

    /// The schema version this build writes.
    static var version: Int { migrations.count }

    /// A constant key for `pg_advisory_xact_lock` ("herald" as a number).
    static let lockKey: Int64 = 0x6865_7261_6c64

    /// Applies every missing migration; throws `StoreError.newerSchema` for a
    /// database written by a newer build.
    static func migrate(_ connection: PostgresConnection, location: String, logger: Logger) async throws {
        try await connection.query("BEGIN", logger: logger)
        do {
            try await connection.query("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
            try await connection.query("""
                CREATE TABLE IF NOT EXISTS herald_schema (
                    version    integer PRIMARY KEY,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """, logger: logger)
            var current = 0
            for try await value in try await connection.query(
                "SELECT coalesce(max(version), 0)::bigint FROM herald_schema", logger: logger
            ).decode(Int64.self) {
                current = Int(value)
            }
            if current > version {
                throw StoreError.newerSchema(path: location, found: current, supported: version)
            }
            for index in current..<version {
                // Constant text from this file, no values in it; one statement
                // at a time (the extended protocol takes one per query).
                for statement in statements(migrations[index]) {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("INSERT INTO herald_schema(version) VALUES (\(index + 1))", logger: logger)
            }
            try await connection.query("COMMIT", logger: logger)
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            throw error
        }
    }

    /// A migration's statements: each ends with `;` at the end of a line
    /// (no other line of a migration may end so).
    static func statements(_ migration: String) -> [String] {
        migration.split(separator: ";\n").map(String.init).filter { $0.contains { !$0.isWhitespace } }
    }

    /// `MessageFunnel`'s expression over a row (bits: handed off, sent,
    /// displayed, opened; the end state times 16).
    static let funnel = """
        ((CASE state WHEN 'cancelled' THEN 1 WHEN 'failed' THEN 2 WHEN 'expired' THEN 3 \
        WHEN 'no_devices' THEN 4 WHEN 'superseded' THEN 5 ELSE 0 END) * 16 \
        + (handed_off_at IS NOT NULL)::int + 2 * (sent_at IS NOT NULL)::int \
        + 4 * (displayed_at IS NOT NULL)::int + 8 * (opened_at IS NOT NULL)::int)
        """

    /// Version 1: everything SQLite's v1…v5 hold, plus the claim's owner and lease.
    static let v1 = """
        CREATE TABLE messages (
            id              text    COLLATE "C" PRIMARY KEY,
            bundle_id       text    NOT NULL,
            platform        text    NOT NULL,
            user_id         text    NOT NULL,
            campaign_id     text    NOT NULL,
            idempotency_key text,
            delivery_method text    NOT NULL,
            ab_test         boolean NOT NULL,
            window_start    bigint  NOT NULL,
            window_end      bigint  NOT NULL,
            due_at          bigint  NOT NULL,
            state           text    NOT NULL,
            created_at      bigint  NOT NULL,
            updated_at      bigint  NOT NULL,
            attempts        integer NOT NULL DEFAULT 0,
            last_error      text,
            apns_id         text,
            -- set while a push is in flight (claimed, not finished)
            sending_since   bigint,
            -- the first claim; never cleared (the key is spent from then on)
            send_started_at bigint,
            -- the push under way (survives a crash; transition clears it)
            push_started_at bigint,
            -- the replica holding the claim, and until when
            owner           text,
            lease_until     bigint,
            handed_off_at   bigint,
            sent_at         bigint,
            displayed_at    bigint,
            opened_at       bigint,
            funnel          smallint GENERATED ALWAYS AS (\(funnel)) STORED,
            request         bytea   NOT NULL
        );

        -- Due messages, waiting for an action and not in flight: the scheduler's
        -- poll (`due`, `claimDue`), `pending`, and Status's lag.
        CREATE INDEX messages_due ON messages (due_at, id)
            WHERE state IN ('scheduled', 'handed_off') AND sending_since IS NULL;

        -- Claims: recovery at start, and expired leases (another replica's takeover).
        CREATE INDEX messages_leases ON messages (lease_until)
            WHERE sending_since IS NOT NULL;

        -- Status: the active states counted without touching history.
        CREATE INDEX messages_active ON messages (state)
            WHERE state IN ('scheduled', 'handed_off');

        -- ListMessages: (bundle, user), newest first, keyset cursor.
        CREATE INDEX messages_user ON messages (bundle_id, user_id, created_at, id);

        -- CampaignReport: one index-only range scan, in GROUP BY order.
        CREATE INDEX messages_campaign ON messages (bundle_id, campaign_id, delivery_method, ab_test, funnel, created_at);

        -- Retention: the finished messages by their last change.
        CREATE INDEX messages_finished ON messages (updated_at)
            WHERE state NOT IN ('scheduled', 'handed_off');

        CREATE TABLE message_keys (
            bundle_id       text NOT NULL,
            idempotency_key text NOT NULL,
            message_id      text COLLATE "C" NOT NULL REFERENCES messages(id) DEFERRABLE INITIALLY DEFERRED,
            PRIMARY KEY (bundle_id, idempotency_key)
        );
        CREATE INDEX message_keys_message ON message_keys (message_id);

        CREATE TABLE outcomes (
            seq          bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            message_id   text    COLLATE "C" NOT NULL REFERENCES messages(id) DEFERRABLE INITIALLY DEFERRED,
            device_token text    COLLATE "C" NOT NULL,
            status       text    NOT NULL,
            apns_id      text,
            reason       text,
            at           bigint  NOT NULL,
            http_status  integer,
            attempts     integer,
            environment  text
        );
        CREATE INDEX outcomes_message ON outcomes (message_id, seq);

        CREATE TABLE handovers (
            message_id   text   COLLATE "C" NOT NULL REFERENCES messages(id) DEFERRABLE INITIALLY DEFERRED,
            device_token text   COLLATE "C" NOT NULL,
            push         bigint NOT NULL,
            at           bigint NOT NULL,
            PRIMARY KEY (message_id, device_token, push)
        );

        CREATE TABLE devices (
            bundle_id     text   NOT NULL,
            device_token  text   COLLATE "C" NOT NULL,
            platform      text   NOT NULL,
            user_id       text   NOT NULL,
            locale        text   NOT NULL,
            timezone      text   NOT NULL,
            environment   text,
            registered_at bigint NOT NULL,
            updated_at    bigint NOT NULL,
            PRIMARY KEY (bundle_id, device_token)
        );
        CREATE INDEX devices_user ON devices (bundle_id, platform, user_id);

        CREATE TABLE revokes (
            message_id text   COLLATE "C" PRIMARY KEY REFERENCES messages(id) DEFERRABLE INITIALLY DEFERRED,
            due_at     bigint NOT NULL
        );

        -- A queue table: vacuum and analyze it well before the defaults
        -- (20 % / 10 % of the table) would, so dead claim versions do not pile up.
        ALTER TABLE messages SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02,
                                  fillfactor = 90);
        """
}

extension PostgresSchema {
    /// Version 2: no foreign keys on the per-device tables and the keys
    /// (see the design notes).
    static let v2 = """
        ALTER TABLE outcomes DROP CONSTRAINT IF EXISTS outcomes_message_id_fkey;
        ALTER TABLE handovers DROP CONSTRAINT IF EXISTS handovers_message_id_fkey;
        ALTER TABLE message_keys DROP CONSTRAINT IF EXISTS message_keys_message_id_fkey;
        """
}

extension PostgresSchema {
    /// Version 3: a claimed row (`sending_since` set) is left out of the
    /// wide indexes. A claim is a non-HOT update: its new row version went
    /// into every index whose predicate it meets, and B-tree inserts were
    /// 41 % of the server's CPU while two replicas dispatched (the two
    /// multi-column text indexes the most). The claim now adds entries to
    /// the primary key and `messages_leases` only; the readers of these
    /// indexes add the claimed rows from `messages_leases` (few: what
    /// replicas are sending).
    ///
    /// New names, created only if missing, then the old ones dropped: an
    /// operator can build the three beforehand with `CREATE INDEX
    /// CONCURRENTLY` (docs/SCALING.md), so the migration on a large table
    /// is three drops instead of three builds that block writes (≈ 15 s per
    /// million rows here).
    static let v3 = """
        CREATE INDEX IF NOT EXISTS messages_user_unclaimed ON messages (bundle_id, user_id, created_at, id)
            WHERE sending_since IS NULL;
        CREATE INDEX IF NOT EXISTS messages_campaign_unclaimed
            ON messages (bundle_id, campaign_id, delivery_method, ab_test, funnel, created_at) WHERE sending_since IS NULL;
        CREATE INDEX IF NOT EXISTS messages_active_unclaimed ON messages (state)
            WHERE state IN ('scheduled', 'handed_off') AND sending_since IS NULL;
        DROP INDEX IF EXISTS messages_user;
        DROP INDEX IF EXISTS messages_campaign;
        DROP INDEX IF EXISTS messages_active;
        """

    /// Version 4: one DISPLAYED and one OPENED row per (message, device)
    /// (issue 24; SQLite's v7). Duplicates a former build wrote are removed,
    /// the first report of each staying (the one the milestones hold); the
    /// partial unique index makes a repeated report a no-op (`ON CONFLICT DO
    /// NOTHING`). It indexes md5(device_token), not the token: an FCM token
    /// may be 4,096 bytes, past a B-tree entry's limit (about 2,700 bytes).
    static let v4 = """
        DELETE FROM outcomes o USING outcomes d
        WHERE o.status IN ('displayed', 'opened') AND d.status = o.status
          AND d.message_id = o.message_id AND d.device_token = o.device_token AND d.seq < o.seq;
        CREATE UNIQUE INDEX IF NOT EXISTS outcomes_reports ON outcomes (message_id, status, md5(device_token))
            WHERE status IN ('displayed', 'opened');
        """

    /// Version 5: the provider's id of an accepted push is a provider
    /// message id (issue 25; SQLite's v8): `apns_id` held FCM message names
    /// too, so the column of `messages` and of `outcomes` is renamed
    /// `provider_message_id`, every stored value kept.
    static let v5 = """
        ALTER TABLE messages RENAME COLUMN apns_id TO provider_message_id;
        ALTER TABLE outcomes RENAME COLUMN apns_id TO provider_message_id;
        """
}
