public import HeraldCore

/// The read side of the store: what GetMessage, ListMessages and
/// CampaignReport show. Every query is scoped by bundle: a message of
/// another bundle is never found.
public protocol MessageReadSide: Sendable {
    /// The message with `messageID` in `bundleID`, with its outcomes.
    func messageDetail(bundleID: String, messageID: String) async throws -> MessageDetail?

    /// The message holding (bundleID, idempotencyKey) now, with its outcomes.
    func messageDetail(bundleID: String, idempotencyKey: String) async throws -> MessageDetail?

    /// One page of a user's messages, newest first (created_at, then id).
    func listMessages(_ query: MessageListQuery) async throws -> MessagePage

    /// Counts per (delivery method, A/B-assigned) of one campaign, superseded
    /// messages left out, optionally only messages created in
    /// [createdFrom, createdBefore).
    func campaignCounts(bundleID: String, campaignID: String, createdFrom: Int64?, createdBefore: Int64?)
        async throws -> [CohortCounts]
}

/// A message as GetMessage shows it. `message.request` is empty (not loaded).
public struct MessageDetail: Sendable, Hashable {
    public var message: StoredMessage
    public var milestones: MessageMilestones
    /// For a SUPERSEDED message: the message that holds its key now.
    public var supersededBy: String?
    /// Its delivery outcomes (the app's DISPLAYED / OPENED reports left
    /// out: the milestones hold them), in the order recorded, at most
    /// `maxDeviceEntries`.
    public var outcomes: [DeviceOutcome]
    /// Devices handed to the provider in the push under way, no answer yet,
    /// at most `maxDeviceEntries`.
    public var inFlight: [HandOverMark]

    /// The most delivery outcomes (and, apart, in-flight marks) one detail
    /// loads, the first recorded: GetMessage's answer stays bounded (at
    /// most about 4 MiB with 4,096-byte FCM tokens, under a client's
    /// default receive limit) whatever a message's device count.
    public static let maxDeviceEntries = 1_000

    public init(message: StoredMessage, milestones: MessageMilestones, supersededBy: String?,
                outcomes: [DeviceOutcome], inFlight: [HandOverMark]) {
        self.message = message
        self.milestones = milestones
        self.supersededBy = supersededBy
        self.outcomes = outcomes
        self.inFlight = inFlight
    }
}

/// Where a ListMessages page continues: strictly older than this
/// (created_at, id) pair (keyset pagination; never OFFSET).
public struct MessageCursor: Sendable, Hashable {
    public var createdAt: Int64
    public var id: String

    public init(createdAt: Int64, id: String) {
        self.createdAt = createdAt
        self.id = id
    }
}

public struct MessageListQuery: Sendable, Hashable {
    public var bundleID: String
    public var userID: String
    /// Only this campaign, when set.
    public var campaignID: String?
    /// Only these states, when not empty.
    public var states: Set<MessageState>
    public var after: MessageCursor?
    public var limit: Int

    public init(bundleID: String, userID: String, campaignID: String? = nil, states: Set<MessageState> = [],
                after: MessageCursor? = nil, limit: Int) {
        self.bundleID = bundleID
        self.userID = userID
        self.campaignID = campaignID
        self.states = states
        self.after = after
        self.limit = limit
    }
}

/// One ListMessages item: the message (request not loaded) and its milestones.
public struct MessageSummaryRow: Sendable, Hashable {
    public var message: StoredMessage
    public var milestones: MessageMilestones

    public init(message: StoredMessage, milestones: MessageMilestones) {
        self.message = message
        self.milestones = milestones
    }
}

public struct MessagePage: Sendable, Hashable {
    public var items: [MessageSummaryRow]
    /// Where the next page starts; nil on the last page.
    public var next: MessageCursor?

    public init(items: [MessageSummaryRow], next: MessageCursor?) {
        self.items = items
        self.next = next
    }
}

/// A campaign's counts for one (delivery method, assignment) pair.
public struct CohortCounts: Sendable, Hashable {
    public var deliveryMethod: DeliveryMethod
    /// True: assigned by the A/B split; false: chosen by the caller.
    public var abTest: Bool
    public var scheduled = 0
    public var handedOff = 0
    public var sent = 0
    public var fallbackSent = 0
    /// DISPLAYED / OPENED reported for a message that reached a device.
    public var displayed = 0
    public var opened = 0
    public var cancelled = 0
    public var failed = 0
    public var expired = 0
    public var noDevices = 0
    /// Messages that reached a device (handed off or sent).
    public var delivered = 0
    /// Messages the delivery policy held at least once (SPEC §4b).
    public var deferred = 0
    /// Messages that ended SUPPRESSED (every device withheld by the policy).
    public var suppressed = 0

    public init(deliveryMethod: DeliveryMethod, abTest: Bool) {
        self.deliveryMethod = deliveryMethod
        self.abTest = abTest
    }
}
