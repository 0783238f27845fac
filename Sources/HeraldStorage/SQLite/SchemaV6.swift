/// Version 6: no triggers on INSERT into `messages` (issue 14, Schedule).
///
/// Each Schedule used to run two trigger programs: the `state_counts`
/// upsert and the check that the `funnel` default fits the new row. A
/// trigger is a sub-program with a frame of its own per row (1–4 KB of
/// allocations, about a fifth of the row's INSERT). The store now writes
/// both itself: the funnel in the INSERT (``MessageFunnel/atInsert(_:)``),
/// the counts once per state per group-commit batch
/// (``MessageInsertBatch``). The UPDATE and DELETE triggers stay: a
/// state change is one row at a time anyway.
enum SchemaV6 {
    static let sql = """
        DROP TRIGGER messages_count_insert;
        DROP TRIGGER messages_funnel_insert;
        """
}
