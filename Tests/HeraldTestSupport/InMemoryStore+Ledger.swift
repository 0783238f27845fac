public import HeraldStorage

/// The policy ledger in memory, as the real stores keep it: the actor runs
/// one call at a time, so a reservation's read and insert are one step. The
/// arithmetic is the stores' own (`CapArithmetic`, `ThrottleSchedule`).
extension InMemoryStore: PolicyLedger {
    public func reserveCountedSends(_ reservations: [CapReservation]) async throws -> [CapAnswer] {
        try checkOpen()
        let (answers, inserts) = CapArithmetic.answer(batch: reservations, counted: Array(countedSendTable.values))
        for send in inserts { countedSendTable[Key(bundleID: send.bundleID, key: send.messageID)] = send }
        return answers
    }

    @discardableResult
    public func recordCountedSend(_ send: CountedSend) async throws -> Bool {
        try checkOpen()
        let key = Key(bundleID: send.bundleID, key: send.messageID)
        guard countedSendTable[key] == nil else { return false }
        countedSendTable[key] = send
        return true
    }

    @discardableResult
    public func releaseCountedSend(bundleID: String, messageID: String) async throws -> Bool {
        try checkOpen()
        return countedSendTable.removeValue(forKey: Key(bundleID: bundleID, key: messageID)) != nil
    }

    public func countedSends(bundleID: String, userID: String, campaignID: String?, since: Int64) async throws -> [Int64] {
        try checkOpen()
        return countedSendTable.values
            .filter { $0.bundleID == bundleID && $0.userID == userID && $0.at > since && (campaignID == nil || $0.campaignID == campaignID) }
            .map(\.at).sorted()
    }

    public func pruneCountedSends(before cutoff: Int64, limit: Int) async throws -> Int {
        try checkOpen()
        let old = countedSendTable.filter { $0.value.at < cutoff }.sorted { $0.value.at < $1.value.at }.prefix(max(1, limit))
        for (key, _) in old { countedSendTable[key] = nil }
        return old.count
    }

    public func takeThrottleSlots(bundleID: String, ratePerSecond: Int, count: Int, now: Int64) async throws -> ThrottleGrant {
        try checkOpen()
        let (grant, next) = ThrottleSchedule.grant(
            nextFree: throttleNextFree[bundleID], nowMicros: ThrottleSchedule.micros(now), ratePerSecond: ratePerSecond, count: count)
        if grant.count > 0 { throttleNextFree[bundleID] = next }
        return grant
    }

    @discardableResult
    public func returnThrottleSlots(bundleID: String, grant: ThrottleGrant, unused: Int) async throws -> Bool {
        try checkOpen()
        let unused = min(unused, grant.count)
        guard unused > 0, throttleNextFree[bundleID] == grant.endMicros else { return false }
        throttleNextFree[bundleID] = grant.endMicros - Int64(unused) * grant.spacingMicros
        return true
    }
}
