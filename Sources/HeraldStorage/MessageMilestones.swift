import HeraldCore

/// When a message first reached each step of its funnel (v4 columns of
/// `messages`), milliseconds since the UNIX epoch; nil when not (yet) reached.
public struct MessageMilestones: Sendable, Hashable {
    /// The context-aware handoff reached a device.
    public var handedOffAt: Int64?
    /// An alert push reached a device (traditional, or the fallback).
    public var sentAt: Int64?
    /// The app reported the message displayed.
    public var displayedAt: Int64?
    /// The app reported the message opened.
    public var openedAt: Int64?

    public init(handedOffAt: Int64? = nil, sentAt: Int64? = nil, displayedAt: Int64? = nil, openedAt: Int64? = nil) {
        self.handedOffAt = handedOffAt
        self.sentAt = sentAt
        self.displayedAt = displayedAt
        self.openedAt = openedAt
    }

    /// SET terms for `transition`'s UPDATE (?3 = the new state, ?7 = now):
    /// the first time a message reaches a milestone state is kept.
    static let onTransition = """
        handed_off_at = CASE WHEN ?3 = 'handed_off' THEN coalesce(handed_off_at, ?7) ELSE handed_off_at END,
        sent_at = CASE WHEN ?3 = 'sent' THEN coalesce(sent_at, ?7) ELSE sent_at END,
        displayed_at = CASE WHEN ?3 = 'displayed' THEN coalesce(displayed_at, ?7) ELSE displayed_at END
        """

    /// The app's DISPLAYED / OPENED reports stamp the message (first one wins);
    /// other outcomes change nothing here.
    static func recordReport(_ outcome: DeviceOutcome, into db: Database) throws {
        let column: String
        switch outcome.kind {
        case .displayed: column = "displayed_at"
        case .opened: column = "opened_at"
        default: return
        }
        let statement = try db.cached("UPDATE messages SET \(column) = coalesce(\(column), ?2) WHERE id = ?1")
        try statement.bind(outcome.messageID, at: 1)
        try statement.bind(outcome.at, at: 2)
        try statement.run()
    }
}
