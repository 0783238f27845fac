import HeraldCore

/// The SQL both stores' event log shares (SQLite schema v12, PostgreSQL v9):
/// how a device outcome becomes a device-level event. Frozen text: shipped
/// migrations embed it, so a change needs a new migration.
package enum EventRows {
    /// The event kind of an `outcomes` row (`prefix`: the row, `NEW.` in a
    /// trigger): the reached kinds, the app's reports, the policy's
    /// (`waiting` → `deferred`, `suppressed`) and `revoked` keep their
    /// meaning; `expired` stays `expired`; every refusal or local failure
    /// (`unregistered`, `bad_device_token`, `rejected`, `failed`,
    /// `revoke_failed`) is `failed`.
    package static func outcomeKind(_ prefix: String) -> String { outcomeKind(status: prefix + "status") }

    /// `outcomeKind` of the status expression `status` (a column or a parameter).
    package static func outcomeKind(status: String) -> String {
        """
        CASE \(status) WHEN 'sent' THEN 'sent' WHEN 'handed_off' THEN 'handed_off' \
        WHEN 'unconfirmed' THEN 'unconfirmed' WHEN 'displayed' THEN 'displayed' WHEN 'opened' THEN 'opened' \
        WHEN 'waiting' THEN 'deferred' WHEN 'suppressed' THEN 'suppressed' WHEN 'revoked' THEN 'revoked' \
        WHEN 'expired' THEN 'expired' ELSE 'failed' END
        """
    }

    /// The event's reason: the outcome's; a dead token's is never empty
    /// (its status when the provider gave none); a failed revoke push says
    /// so (`revoke_failed: unregistered: Unregistered`).
    package static func outcomeReason(_ prefix: String) -> String {
        outcomeReason(status: prefix + "status", reason: prefix + "reason")
    }

    /// `outcomeReason` of the expressions `status` and `reason`.
    package static func outcomeReason(status: String, reason: String) -> String {
        """
        CASE WHEN \(status) = 'revoke_failed' THEN 'revoke_failed: ' || coalesce(\(reason), '') \
        WHEN \(status) IN ('unregistered', 'bad_device_token') THEN coalesce(\(reason), \(status)) \
        ELSE \(reason) END
        """
    }

    /// The columns every read selects, in `DeliveryEvent`'s order after the
    /// cursor (the store puts its cursor columns first).
    package static let columns = """
        at, kind, bundle_id, message_id, idempotency_key, user_id, campaign_id, platform, device_token, reason, http_status
        """

    /// How many rows one read examines at most per event asked for: a
    /// selective filter returns fewer (and `reached` moves past the rest),
    /// so one read stays bounded.
    package static let scanFactor = 8

    /// Builds an event from its columns; throws for a kind or platform this
    /// build does not know.
    package static func event(
        cursor: EventCursor, at: Int64, kind: String, bundleID: String, messageID: String, idempotencyKey: String?,
        userID: String, campaignID: String, platform: String, deviceToken: String?, reason: String?, httpStatus: Int?
    ) throws -> DeliveryEvent {
        guard let eventKind = EventKind(rawValue: kind) else {
            throw StoreError.invalidRecord("event \(cursor.major).\(cursor.minor): unknown kind \(kind)")
        }
        guard let eventPlatform = Platform(rawValue: platform) else {
            throw StoreError.invalidRecord("event \(cursor.major).\(cursor.minor): unknown platform \(platform)")
        }
        return DeliveryEvent(
            cursor: cursor, at: at, kind: eventKind, bundleID: bundleID, messageID: messageID,
            idempotencyKey: idempotencyKey, userID: userID, campaignID: campaignID, platform: eventPlatform,
            deviceToken: deviceToken, reason: reason, httpStatus: httpStatus)
    }
}
