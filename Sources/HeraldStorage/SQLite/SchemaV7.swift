/// Version 7: one DISPLAYED and one OPENED row per (message, device) (issue
/// 24, SPEC §7 "Added 2026-11-27").
///
/// ReportEvent used to add a row per call, so one caller could grow a
/// message's outcomes without bound. Duplicates a former build wrote are
/// removed (the first report of each (message, device, event) stays: it is
/// the one whose time the milestones hold); the partial unique index makes a
/// repeated report a no-op (`INSERT … ON CONFLICT DO NOTHING`). Delivery
/// outcomes are not in it: a device may get several per message (the
/// hand-off, then the fallback alert; a revoke).
enum SchemaV7 {
    static let sql = """
        DELETE FROM outcomes
        WHERE status IN ('displayed', 'opened') AND rowid NOT IN (
            SELECT min(rowid) FROM outcomes WHERE status IN ('displayed', 'opened')
            GROUP BY message_id, device_token, status);

        CREATE UNIQUE INDEX outcomes_reports ON outcomes(message_id, device_token, status)
            WHERE status IN ('displayed', 'opened');
        """
}
