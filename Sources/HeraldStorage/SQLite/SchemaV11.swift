/// Version 11: `messages.transactional` (issue 26, SPEC §4b), so that a
/// restart rebuilds the due index with each bundle's transactional
/// messages first, as Schedule placed them. Rows older builds wrote are not
/// transactional (the default); no backfill.
enum SchemaV11 {
    static let sql = """
        ALTER TABLE messages ADD COLUMN transactional INTEGER NOT NULL DEFAULT 0;
        """
}
