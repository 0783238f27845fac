/// Version 16: an outcome's event is appended by the store, not by a
/// trigger (issue 27: dispatch at the provider's speed).
///
/// Schema v12's `events_outcome` looked the message up by id for every
/// outcome row, and a trigger costs its program's frame even when its body
/// is cheap: ~46k of SQLite's ~320k instructions a dispatched push
/// (`bench/sqlite-ends.sh`). The dispatcher knows the message's columns from
/// the claim (`EventSubject`), so `SQLiteStore.insert(_:into:subject:)`
/// writes the same row itself, reading the message only when a caller has
/// no subject; `recoverInterrupted` appends the events of the UNCONFIRMED
/// outcomes it inserts. Every outcome is written by those two.
enum SchemaV16 {
    static let sql = """
        DROP TRIGGER events_outcome;
        """
}
