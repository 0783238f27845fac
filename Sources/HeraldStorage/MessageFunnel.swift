import HeraldCore

/// A message's state and milestones in one small integer (the `funnel`
/// column, written by the INSERT and by a transition's UPDATE, and kept by
/// an UPDATE trigger for every other change; see `SchemaV4`, `SchemaV6`,
/// `SchemaV13`): bits 0–3 say whether it was handed off, sent,
/// displayed, opened; bits 4–6 how it ended (0 for every state that is not
/// one of the ends counted, or superseded).
public struct MessageFunnel: Hashable, Sendable {
    public var rawValue: Int

    public init(rawValue: Int) { self.rawValue = rawValue }

    static let handedOff = 1, sent = 2, displayed = 4, opened = 8
    static let cancelled = 1, failed = 2, expired = 3, noDevices = 4, superseded = 5

    /// The SQL expression over a row's columns (`prefix` "NEW." in triggers).
    static func expression(_ prefix: String) -> String {
        """
        ((CASE \(prefix)state WHEN 'cancelled' THEN 1 WHEN 'failed' THEN 2 WHEN 'expired' THEN 3 \
        WHEN 'no_devices' THEN 4 WHEN 'superseded' THEN 5 ELSE 0 END) * 16 \
        + (\(prefix)handed_off_at IS NOT NULL) + 2 * (\(prefix)sent_at IS NOT NULL) \
        + 4 * (\(prefix)displayed_at IS NOT NULL) + 8 * (\(prefix)opened_at IS NOT NULL))
        """
    }

    /// The funnel after `SQLiteStore.endSQL`'s UPDATE (?3 = the new state,
    /// milestones as `MessageMilestones.onTransition` sets them), over the
    /// row's old values — an UPDATE's SET terms read the old row. Equal to
    /// `expression` over the new row, so `SchemaV13`'s trigger finds
    /// nothing to fix and the row is written once, not twice.
    static let afterTransition = """
        ((CASE ?3 WHEN 'cancelled' THEN 1 WHEN 'failed' THEN 2 WHEN 'expired' THEN 3 \
        WHEN 'no_devices' THEN 4 WHEN 'superseded' THEN 5 ELSE 0 END) * 16 \
        + (?3 = 'handed_off' OR handed_off_at IS NOT NULL) + 2 * (?3 = 'sent' OR sent_at IS NOT NULL) \
        + 4 * (?3 = 'displayed' OR displayed_at IS NOT NULL) + 8 * (opened_at IS NOT NULL))
        """

    /// The funnel of a row as it is inserted: its state's end, no milestone
    /// (the milestone columns are not written by an INSERT). Equal to
    /// `expression` over the new row, which the INSERT trigger used to run.
    static func atInsert(_ state: MessageState) -> Int {
        switch state {
        case .cancelled: cancelled << 4
        case .failed: failed << 4
        case .expired: expired << 4
        case .noDevices: noDevices << 4
        case .superseded: superseded << 4
        // SUPPRESSED is counted apart (schema v9's `messages_policy`), as
        // the v4 expression has no end for it.
        case .scheduled, .handedOff, .sent, .displayed, .suppressed: 0
        }
    }

    var end: Int { rawValue >> 4 }
    func has(_ bit: Int) -> Bool { rawValue & bit != 0 }

    /// Adds `count` messages with this funnel to `counts` (superseded ones
    /// are not counted: their replacement is).
    public func add(_ count: Int, to counts: inout CohortCounts) {
        guard end != Self.superseded else { return }
        let handed = has(Self.handedOff), sent = has(Self.sent)
        let delivered = handed || sent
        counts.scheduled += count
        if handed { counts.handedOff += count }
        if sent { counts.sent += count }
        if handed && sent { counts.fallbackSent += count }
        if delivered { counts.delivered += count }
        // A report for a message that never reached a device is not counted.
        if delivered && has(Self.displayed) { counts.displayed += count }
        if delivered && has(Self.opened) { counts.opened += count }
        switch end {
        case Self.cancelled: counts.cancelled += count
        case Self.failed: counts.failed += count
        case Self.expired: counts.expired += count
        case Self.noDevices: counts.noDevices += count
        default: break
        }
    }
}
