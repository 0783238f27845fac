/// Version 13: a transition writes the `messages` row once.
///
/// Until v12 every change of the state or a milestone fired
/// `messages_funnel_update`, which rewrote the row a second time (and moved
/// its `messages_campaign` entry twice) to store the new funnel. The
/// dispatcher's end of a push (`SQLiteStore.endSQL`) now sets `funnel` in
/// its own UPDATE (`MessageFunnel.afterTransition`); the trigger stays for
/// every other change, guarded by a WHEN that finds the funnel already
/// right — so no write path can leave a stale funnel, and the hot one pays
/// a comparison instead of a second row write (bench/RESULTS.md, "Dispatch
/// hot path", 2026-11-28).
///
/// Self-contained: one trigger replaced; no row changes.
enum SchemaV13 {
    static let sql = """
        DROP TRIGGER IF EXISTS messages_funnel_update;
        CREATE TRIGGER messages_funnel_update
            AFTER UPDATE OF state, handed_off_at, sent_at, displayed_at, opened_at ON messages
            WHEN NEW.funnel IS NOT \(MessageFunnel.expression("NEW.")) BEGIN
            UPDATE messages SET funnel = \(MessageFunnel.expression("NEW.")) WHERE rowid = NEW.rowid;
        END;
        """
}
