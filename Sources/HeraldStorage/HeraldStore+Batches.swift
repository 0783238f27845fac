public import HeraldCore

/// One `transition` call, for `HeraldStore.transitions(_:)`.
public struct Transition: Sendable {
    public let id: String
    public let from: MessageState
    public let to: MessageState
    public let dueAt: Int64?
    public let providerMessageID: String?
    public let lastError: String?
    public let now: Int64
    public let outcomes: [DeviceOutcome]
    /// The message's columns its outcomes' events repeat, when the caller
    /// has them (the dispatcher, from the claim): the embedded store then
    /// writes those events without looking the message up.
    public let subject: EventSubject?

    /// The arguments of `HeraldStore.transition(id:from:to:…)`.
    public init(
        id: String, from: MessageState, to: MessageState, dueAt: Int64? = nil, providerMessageID: String? = nil,
        lastError: String? = nil, now: Int64, outcomes: [DeviceOutcome] = [], subject: EventSubject? = nil
    ) {
        self.id = id
        self.from = from
        self.to = to
        self.dueAt = dueAt
        self.providerMessageID = providerMessageID
        self.lastError = lastError
        self.now = now
        self.outcomes = outcomes
        self.subject = subject
    }
}

/// What every event of a message repeats from its row (`events` columns);
/// none of it changes after the message is stored.
public struct EventSubject: Sendable, Hashable {
    public let messageID: String
    public let bundleID: String
    public let idempotencyKey: String?
    public let userID: String
    public let campaignID: String
    public let platform: Platform

    public init(_ message: StoredMessage) {
        messageID = message.id
        bundleID = message.bundleID
        idempotencyKey = message.idempotencyKey
        userID = message.userID
        campaignID = message.campaignID
        platform = message.platform
    }
}

/// Whose devices to read (`HeraldStore.devices(of:)`).
public struct DeviceUser: Hashable, Sendable {
    public let bundleID: String
    public let platform: Platform
    public let userID: String

    public init(bundleID: String, platform: Platform, userID: String) {
        self.bundleID = bundleID
        self.platform = platform
        self.userID = userID
    }
}

extension HeraldStore {
    /// One claim per id (a store without a batched claim).
    public func claim(ids: [String], now: Int64) async throws -> [StoredMessage] {
        var claimed: [StoredMessage] = []
        for id in ids {
            if let message = try await claim(id: id, from: .scheduled, now: now) {
                claimed.append(message)
            } else if let message = try await claim(id: id, from: .handedOff, now: now) {
                claimed.append(message)
            }
        }
        return claimed
    }

    /// One transition per item (a store without a batched one); checked
    /// first, so an illegal item writes nothing.
    public func transitions(_ items: [Transition]) async throws -> [Bool] {
        for item in items where !item.from.canTransition(to: item.to) {
            throw StoreError.illegalTransition(from: item.from, to: item.to, id: item.id)
        }
        var applied: [Bool] = []
        for item in items {
            applied.append(try await transition(
                id: item.id, from: item.from, to: item.to, dueAt: item.dueAt, providerMessageID: item.providerMessageID,
                lastError: item.lastError, now: item.now, recording: item.outcomes))
        }
        return applied
    }

    /// One read per user (a store without a batched read).
    public func devices(of users: [DeviceUser]) async throws -> [[Device]] {
        var devices: [[Device]] = []
        for user in users {
            devices.append(try await self.devices(bundleID: user.bundleID, platform: user.platform, userID: user.userID))
        }
        return devices
    }
}
