/// Version 8: fair claims across bundles (issue 26, SPEC §4b; SQLite's v11).
/// `messages.transactional` (Schedule's flag; rows older builds wrote are
/// not transactional) and `messages_due_lanes`, the due messages by bundle,
/// transactional first, then by due time: `claimDue` walks the bundles
/// with a due message and takes a turn from each, so one bundle's released
/// backlog never delays another's due pushes. A constant default: no table
/// rewrite. The index is built inside the migration's transaction (writes
/// wait for it); on a large table an operator can build it beforehand with
/// `CREATE INDEX CONCURRENTLY` under the same name (docs/SCALING.md).
enum PostgresSchemaV8 {
    static let sql = """
        ALTER TABLE messages ADD COLUMN IF NOT EXISTS transactional boolean NOT NULL DEFAULT false;
        CREATE INDEX IF NOT EXISTS messages_due_lanes ON messages (bundle_id, transactional, due_at, id)
            WHERE state IN ('scheduled', 'handed_off') AND sending_since IS NULL;
        """
}
