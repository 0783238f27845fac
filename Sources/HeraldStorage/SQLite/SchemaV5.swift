/// Version 5: retention (finished messages older than the retention period
/// are deleted in small batches; `SQLiteStore+Retention.swift`).
///
/// - `messages_finished`: the finished messages by their last change, so a
///   pruning batch is an index range scan of the oldest rows, never a scan
///   of the table. Partial: SCHEDULED and HANDED_OFF rows (the bulk of a
///   busy store's writes at Schedule) are not in it. The pruning query
///   repeats its WHERE term verbatim, which is how SQLite knows it applies.
/// - `message_keys_message`: deleting a message makes SQLite look for child
///   rows of every foreign key to it (`PRAGMA foreign_keys = ON`); without
///   this index each deleted message would scan the whole key table.
enum SchemaV5 {
    static let sql = """
        CREATE INDEX messages_finished ON messages(updated_at)
            WHERE state NOT IN ('scheduled', 'handed_off');

        CREATE INDEX message_keys_message ON message_keys(message_id);
        """
}
