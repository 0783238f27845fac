public import HeraldCore
public import HeraldStorage

/// `HeraldStore` in memory, for handler and wiring tests: the contract of
/// the protocol (last request wins, spent keys, checked transitions, claims
/// and their release, the crash rule, revokes, device upserts, retention,
/// Schedule through a callback, leases, the policy ledger) without a file. Not durable, by
/// design: it cannot survive a restart. The store contract suite
/// (Tests/HeraldStorageTests/Contract) runs against it beside SQLite and
/// PostgreSQL, so a service test cannot pass against a store that behaves
/// differently. `waitFor` lets a test wait for a message to reach a state
/// without sleeping.
public actor InMemoryStore: HeraldStore {
    struct Key: Hashable {
        var bundleID: String
        var key: String
    }

    struct HandOver: Hashable {
        var messageID: String
        var deviceToken: String
        var push: Int64
    }

    private struct Waiter {
        var id: String
        var until: @Sendable (StoredMessage) -> Bool
        var continuation: CheckedContinuation<StoredMessage, Never>
    }

    var messages: [String: StoredMessage] = [:]
    var keys: [Key: String] = [:]
    var outcomeLog: [String: [DeviceOutcome]] = [:]
    var handOverMarks: [HandOver: Int64] = [:]
    var revokes: [String: Int64] = [:]
    /// When the delivery policy first held each message (`hold`).
    public internal(set) var deferredAt: [String: Int64] = [:]
    var deviceTable: [Key: Device] = [:]
    private var waiters: [Waiter] = []
    /// Until when each claim is leased (InMemoryStore+Shared.swift).
    var leases: [String: Int64] = [:]
    /// Counted sends by (bundle, message) (InMemoryStore+Ledger.swift).
    var countedSendTable: [Key: CountedSend] = [:]
    /// Each bundle's next free throttle slot, µs (InMemoryStore+Ledger.swift).
    var throttleNextFree: [String: Int64] = [:]
    /// The delivery event log (InMemoryStore+Events.swift), the events
    /// retention trimmed off its front, and each bundle's prune watermark.
    var eventLog: [DeliveryEvent] = []
    var eventsTrimmed = 0
    var eventHorizon: [String: EventCursor] = [:]
    /// Set by `close()`: later calls throw `StoreError.closed`.
    var closed = false
    /// The ids of each `renewLeases` call (InMemoryStore+Shared.swift).
    public internal(set) var leaseRenewals: [[String]] = []

    public init() {}

    /// Every stored message (superseded and cancelled ones too).
    public var allMessages: [StoredMessage] { messages.values.sorted { $0.id < $1.id } }

    /// Returns the message `id` once `until` holds for it (at once if it does).
    public func waitFor(id: String, until: @escaping @Sendable (StoredMessage) -> Bool) async -> StoredMessage {
        if let message = messages[id], until(message) { return message }
        return await withCheckedContinuation { waiters.append(Waiter(id: id, until: until, continuation: $0)) }
    }

    func put(_ message: StoredMessage) {
        appendStateEvent(old: messages[message.id], new: message)
        messages[message.id] = message
        var ready: [(CheckedContinuation<StoredMessage, Never>, StoredMessage)] = []
        waiters.removeAll { waiter in
            guard waiter.id == message.id, waiter.until(message) else { return false }
            ready.append((waiter.continuation, message))
            return true
        }
        for (continuation, message) in ready { continuation.resume(returning: message) }
    }

    static func check(id: String, from: MessageState, to: MessageState) throws(StoreError) {
        guard from.canTransition(to: to) else { throw .illegalTransition(from: from, to: to, id: id) }
    }

    /// As the real stores: once closed, every call throws `StoreError.closed`.
    func checkOpen() throws(StoreError) {
        if closed { throw .closed }
    }

    /// As the real stores: an app's or a provider's outcome names a stored
    /// message, or it is refused (SQLite's foreign key; PostgreSQL finds the
    /// message first).
    func requireMessages(_ ids: [String]) throws(StoreError) {
        for id in ids where messages[id] == nil { throw .invalidRecord("no message \(id)") }
    }

    func isWaiting(_ message: StoredMessage) -> Bool {
        (message.state == .scheduled || message.state == .handedOff) && message.sendingSince == nil
    }

    // MARK: Messages (API)

    public func schedule(_ message: StoredMessage, deadline: ContinuousClock.Instant?) async throws -> ScheduleOutcome {
        if Task.isCancelled { throw StoreError.abandoned }
        return try write(message, deadline: deadline)
    }

    /// Schedule's write, for the awaited and the callback form alike: past
    /// `deadline` nothing is stored (`StoreError.abandoned`), as in the real
    /// stores' transactions.
    func write(_ message: StoredMessage, deadline: ContinuousClock.Instant?) throws -> ScheduleOutcome {
        try checkOpen()
        if deadline.map({ $0 <= ContinuousClock.now }) == true { throw StoreError.abandoned }
        guard let key = message.idempotencyKey else {
            put(message)
            return .scheduled(message, supersededID: nil)
        }
        var supersededID: String?
        if let existingID = keys[Key(bundleID: message.bundleID, key: key)], var existing = messages[existingID] {
            if existing.keySpent { return .alreadyExists(existing) }
            if existing.state == .scheduled {
                try Self.check(id: existing.id, from: .scheduled, to: .superseded)
                existing.state = .superseded
                existing.updatedAt = message.createdAt
                put(existing)
                supersededID = existing.id
            }
        }
        put(message)
        keys[Key(bundleID: message.bundleID, key: key)] = message.id
        return .scheduled(message, supersededID: supersededID)
    }

    public func cancel(
        bundleID: String, platform: Platform, userID: String, campaignID: String, idempotencyKey: String, now: Int64
    ) async throws -> CancelOutcome {
        try checkOpen()
        guard let id = keys[Key(bundleID: bundleID, key: idempotencyKey)], var message = messages[id],
              message.platform == platform, message.userID == userID, message.campaignID == campaignID
        else { return .notFound }
        if message.isSending { return .notCancelled(message) }
        switch message.state {
        case .cancelled:
            return .cancelled(message, revokeDue: false)
        case .scheduled, .handedOff:
            let handedOff = message.state == .handedOff
            try Self.check(id: id, from: message.state, to: .cancelled)
            if handedOff && revokes[id] == nil { revokes[id] = now }
            message.state = .cancelled
            message.updatedAt = now
            put(message)
            return .cancelled(message, revokeDue: handedOff)
        default:
            return .notCancelled(message)
        }
    }

    public func message(id: String) async throws -> StoredMessage? {
        try checkOpen()
        return messages[id]
    }

    public func message(bundleID: String, idempotencyKey: String) async throws -> StoredMessage? {
        try checkOpen()
        return keys[Key(bundleID: bundleID, key: idempotencyKey)].flatMap { messages[$0] }
    }

    // MARK: Scheduler and dispatcher

    var waitingInDueOrder: [StoredMessage] {
        messages.values.filter(isWaiting).sorted { ($0.dueAt, $0.id) < ($1.dueAt, $1.id) }
    }

    public func due(before: Int64, limit: Int) async throws -> [StoredMessage] {
        try checkOpen()
        return Array(waitingInDueOrder.lazy.filter { $0.dueAt <= before }.prefix(limit))
    }

    public func pending(after cursor: PendingCursor?, limit: Int) async throws -> [PendingEntry] {
        try checkOpen()
        return Array(waitingInDueOrder.lazy
            .filter { message in cursor.map { (message.dueAt, message.id) > ($0.dueAt, $0.id) } ?? true }
            .prefix(limit)
            .map { PendingEntry(id: $0.id, dueAt: $0.dueAt, state: $0.state, bundleID: $0.bundleID, transactional: $0.transactional) })
    }

    public func claim(id: String, from: MessageState, now: Int64) async throws -> StoredMessage? {
        try checkOpen()
        try Self.check(id: id, from: from, to: .sent)
        guard var message = messages[id], message.state == from, message.sendingSince == nil else { return nil }
        message.sendingSince = now
        message.sendStartedAt = message.sendStartedAt ?? now
        message.pushStartedAt = message.pushStartedAt ?? now
        message.attempts += 1
        message.updatedAt = now
        leases[id] = now + leaseMilliseconds
        put(message)
        return message
    }

    public func transition(
        id: String, from: MessageState, to: MessageState, dueAt: Int64?, providerMessageID: String?, lastError: String?, now: Int64,
        recording outcomes: [DeviceOutcome]
    ) async throws -> Bool {
        try checkOpen()
        try Self.check(id: id, from: from, to: to)
        for outcome in outcomes { record(outcome) }
        handOverMarks = handOverMarks.filter { $0.key.messageID != id }
        guard var message = messages[id], message.state == from else { return false }
        message.state = to
        message.dueAt = dueAt ?? message.dueAt
        message.providerMessageID = providerMessageID ?? message.providerMessageID
        message.lastError = lastError ?? message.lastError
        message.sendingSince = nil
        message.pushStartedAt = nil
        message.updatedAt = now
        leases[id] = nil
        put(message)
        return true
    }

    public func hold(id: String, from: MessageState, now: Int64, recording outcomes: [DeviceOutcome]) async throws -> Bool {
        try checkOpen()
        let hold = try DeviceHold(id: id, outcomes: outcomes)
        for outcome in hold.final { record(outcome) }
        guard var message = messages[id], message.state == from, message.sendingSince != nil else { return false }
        let touched = pushTouched(message)
        if message.sendStartedAt == message.sendingSince && !touched { message.sendStartedAt = nil }
        if !touched { message.pushStartedAt = nil }
        message.sendingSince = nil
        message.dueAt = hold.dueAt
        message.updatedAt = now
        leases[id] = nil
        deferredAt[id] = deferredAt[id] ?? now
        appendEvent(.deferred, of: message, at: now)
        for outcome in hold.waiting { record(outcome) }
        put(message)
        return true
    }

    public func recordOutcome(_ outcome: DeviceOutcome) async throws {
        try checkOpen()
        try requireMessages([outcome.messageID])
        record(outcome)
    }

    public func outcomes(messageID: String) async throws -> [DeviceOutcome] {
        try checkOpen()
        return outcomeLog[messageID] ?? []
    }

    public func recordHandOvers(_ marks: [HandOverMark]) async throws {
        try checkOpen()
        for mark in marks {
            let key = HandOver(messageID: mark.messageID, deviceToken: mark.deviceToken, push: mark.push)
            if handOverMarks[key] == nil { handOverMarks[key] = mark.at }
        }
    }

    public func handOvers(messageID: String, push: Int64) async throws -> [String] {
        try checkOpen()
        return handOverMarks.keys.filter { $0.messageID == messageID && $0.push == push }.map(\.deviceToken).sorted()
    }

    /// Whether the message's open push handed anything over or got any answer.
    func pushTouched(_ message: StoredMessage) -> Bool {
        guard let push = message.pushStartedAt else { return false }
        return handOverMarks.keys.contains { $0.messageID == message.id && $0.push == push }
            || (outcomeLog[message.id] ?? []).contains { $0.at >= push && $0.kind.isFinal }
    }

    func release(_ message: StoredMessage, now: Int64) {
        var message = message
        let touched = pushTouched(message)
        if message.sendStartedAt == message.sendingSince && !touched { message.sendStartedAt = nil }
        if !touched { message.pushStartedAt = nil }
        message.sendingSince = nil
        message.updatedAt = now
        leases[message.id] = nil
        put(message)
    }

    public func releaseClaim(id: String, now: Int64) async throws -> Bool {
        try checkOpen()
        guard let message = messages[id], message.sendingSince != nil else { return false }
        release(message, now: now)
        return true
    }

    public func recoverInterrupted(now: Int64) async throws -> InterruptedRecovery {
        try checkOpen()
        return try await recover(now: now) { _ in true }
    }

    /// The crash rule over the claims `inScope` accepts.
    func recover(now: Int64, inScope: (StoredMessage) -> Bool) async throws -> InterruptedRecovery {
        let interrupted = messages.values.filter { $0.sendingSince != nil && inScope($0) }.sorted { $0.id < $1.id }
        var unconfirmed = 0
        for message in interrupted {
            guard let push = message.pushStartedAt else { continue }
            let answered = Set((outcomeLog[message.id] ?? []).filter { $0.at >= push && $0.kind.isFinal }.map(\.deviceToken))
            for token in try await handOvers(messageID: message.id, push: push) where !answered.contains(token) {
                record(DeviceOutcome(
                    messageID: message.id, deviceToken: token, kind: .unconfirmed,
                    reason: DeviceOutcomeKind.unconfirmedReason, at: now))
                unconfirmed += 1
            }
        }
        for message in interrupted { release(message, now: now) }
        return InterruptedRecovery(resumed: interrupted.map(\.id), unconfirmedDevices: unconfirmed)
    }

    public func pendingRevokes() async throws -> [PendingRevoke] {
        try checkOpen()
        return revokes.map { PendingRevoke(messageID: $0.key, dueAt: $0.value) }.sorted { ($0.dueAt, $0.messageID) < ($1.dueAt, $1.messageID) }
    }

    public func completeRevoke(messageID: String) async throws {
        try checkOpen()
        revokes[messageID] = nil
    }

    // MARK: Devices

    public func registerDevice(_ device: Device) async throws -> Bool {
        try checkOpen()
        let key = Key(bundleID: device.bundleID, key: device.deviceToken)
        guard let existing = deviceTable[key] else {
            deviceTable[key] = device
            return true
        }
        var updated = device
        updated.registeredAt = existing.registeredAt
        deviceTable[key] = updated
        return false
    }

    public func unregisterDevice(bundleID: String, deviceToken: String) async throws -> Bool {
        try checkOpen()
        return deviceTable.removeValue(forKey: Key(bundleID: bundleID, key: deviceToken)) != nil
    }

    public func devices(bundleID: String, platform: Platform, userID: String) async throws -> [Device] {
        try checkOpen()
        return deviceTable.values
            .filter { $0.bundleID == bundleID && $0.platform == platform && $0.userID == userID }
            .sorted { $0.deviceToken < $1.deviceToken }
    }

    public func removeDevice(bundleID: String, deviceToken: String, ifRegisteredBefore timestamp: Int64) async throws -> Bool {
        try checkOpen()
        let key = Key(bundleID: bundleID, key: deviceToken)
        guard let device = deviceTable[key], device.updatedAt < timestamp else { return false }
        deviceTable[key] = nil
        appendDeviceRemoved(device, at: timestamp)
        return true
    }

    // MARK: Operators

    public func countsByState() async throws -> [MessageState: Int] {
        try checkOpen()
        return messages.values.reduce(into: [:]) { $0[$1.state, default: 0] += 1 }
    }

    public func oldestDue(now: Int64) async throws -> Int64? {
        try checkOpen()
        return messages.values.filter { isWaiting($0) && $0.dueAt <= now }.map(\.dueAt).min()
    }

    public func health() async -> StoreHealth {
        StoreHealth(kind: "memory", location: "in-process", ok: true, lastError: nil)
    }
}
