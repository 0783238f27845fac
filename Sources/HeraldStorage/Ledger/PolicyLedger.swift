/// The store's half of SPEC §4b's frequency caps and throttle: a ledger of
/// counted sends (one per message that reached its user) and a per-bundle
/// schedule of send slots, both exact across every process sharing the
/// store. The dispatcher decides when to ask; the store only answers
/// atomically (docs/INTERNALS.md, "The policy ledger").
///
/// All instants are milliseconds since the UNIX epoch, passed in by the
/// caller (the throttle's slots are kept in microseconds).
public protocol PolicyLedger: Sendable {
    /// Many `reserveCountedSend`s in one atomic step (one write, one
    /// transaction: the dispatcher reserves a claimed batch at once), in
    /// order: a reservation earlier in the batch counts for the later ones.
    /// The answers are in `reservations`' order. When it throws, nothing
    /// was reserved.
    func reserveCountedSends(_ reservations: [CapReservation]) async throws -> [CapAnswer]

    /// `reserveCountedSends` without waiting for another process: a
    /// reservation whose (bundle, user) another process is reserving for
    /// at this moment answers nil ("busy: ask again shortly"), and nothing
    /// is reserved for it, unless `waitingIfBusy` at its index is true
    /// (then it waits, as in `reserveCountedSends`: a caller's bound on
    /// asking again). The others are answered as `reserveCountedSends`
    /// would answer them alone, in order. `waitingIfBusy` has one flag per
    /// reservation. A store with a single writer is never busy (the default
    /// answers every reservation).
    func reserveCountedSends(_ reservations: [CapReservation], waitingIfBusy: [Bool]) async throws -> [CapAnswer?]

    /// Counts `send` whatever the caps say (an SDK-reported DISPLAYED counts
    /// even over the cap, SPEC "What counts"). Idempotent by message: a
    /// message already counted keeps its first instant. Returns whether it
    /// was newly counted.
    @discardableResult
    func recordCountedSend(_ send: CountedSend) async throws -> Bool

    /// Gives a reservation back (the push reached no device). Returns
    /// whether the message was counted.
    @discardableResult
    func releaseCountedSend(bundleID: String, messageID: String) async throws -> Bool

    /// The instants of the user's counted sends strictly after `since`
    /// (pass `now - period`: the rolling window `(now - period, now]` and
    /// any later ones), oldest first; only `campaignID`'s when given.
    func countedSends(bundleID: String, userID: String, campaignID: String?, since: Int64) async throws -> [Int64]

    /// Retention: deletes at most `limit` counted sends recorded before
    /// `cutoff` (pass `now` minus the longest configured cap period: older
    /// ones no cap can see), in one write. Returns how many; fewer than
    /// `limit` means none is left.
    func pruneCountedSends(before cutoff: Int64, limit: Int) async throws -> Int

    /// Books up to `count` send slots of the bundle's throttle at
    /// `ratePerSecond`, shared by every replica: the slots start at
    /// max(the bundle's next free slot, `now`), one every
    /// `ThrottleSchedule.spacing(ratePerSecond:)`, and only slots within
    /// `ThrottleSchedule.horizonMicros` of `now` are booked (the grant may hold
    /// fewer than `count`, or none: retry at `grant.retryAt`). The caller
    /// waits for each slot in memory, never in the store.
    func takeThrottleSlots(bundleID: String, ratePerSecond: Int, count: Int, now: Int64) async throws -> ThrottleGrant

    /// Gives back the last `unused` slots of `grant`, only when no slot was
    /// booked after it (one compare-and-set); otherwise they stay lost (at
    /// most one horizon of slots). Returns whether they were given back.
    @discardableResult
    func returnThrottleSlots(bundleID: String, grant: ThrottleGrant, unused: Int) async throws -> Bool
}

extension PolicyLedger {
    /// Never busy: `reserveCountedSends`, every reservation answered.
    public func reserveCountedSends(_ reservations: [CapReservation], waitingIfBusy: [Bool]) async throws -> [CapAnswer?] {
        try await reserveCountedSends(reservations).map(Optional.some)
    }

    /// In one atomic step: if `reservation.messageID` is already counted,
    /// `.reserved(at:)` its recorded instant (a resumed or retried push never
    /// counts twice); else, if every cap allows one more counted send at
    /// `now`, records it at `now` and answers `.reserved(at: now)`; else
    /// `.heldUntil(t)`, `t` the earliest instant every cap allows (from the
    /// stored instants), or `.exhausted` when `t >= notAfter`. Exact under
    /// concurrency: reservations for one (bundle, user) are serialized, in
    /// this process and across replicas.
    public func reserveCountedSend(_ reservation: CapReservation) async throws -> CapAnswer {
        try await reserveCountedSends([reservation])[0]
    }
}

/// One `cap=N/PERIOD` (or `campaign-cap=`): at most `count` counted sends in
/// any rolling `periodMilliseconds`.
public struct CapLimit: Sendable, Hashable {
    /// N: a count of 0 or less allows nothing (`.exhausted`).
    public var count: Int
    /// PERIOD in milliseconds; 0 or less limits nothing.
    public var periodMilliseconds: Int64

    public init(count: Int, periodMilliseconds: Int64) {
        self.count = count
        self.periodMilliseconds = periodMilliseconds
    }
}

/// A request to count one message's send against its user's caps
/// (`PolicyLedger.reserveCountedSend`).
public struct CapReservation: Sendable, Hashable {
    public var bundleID: String
    public var userID: String
    public var campaignID: String
    /// The message the send belongs to: the reservation's identity.
    public var messageID: String
    /// The instant of the send (milliseconds).
    public var now: Int64
    /// The bundle's `cap=` rules, over every counted send of the user.
    public var caps: [CapLimit]
    /// The bundle's `campaign-cap=` rules, over the user's counted sends of `campaignID`.
    public var campaignCaps: [CapLimit]
    /// A hold ending at or after this instant (the window's end, the TTL)
    /// is `.exhausted` instead; so is a send at `now >= notAfter`, even
    /// within the caps (nothing is recorded).
    public var notAfter: Int64

    public init(
        bundleID: String, userID: String, campaignID: String, messageID: String, now: Int64,
        caps: [CapLimit], campaignCaps: [CapLimit], notAfter: Int64
    ) {
        self.bundleID = bundleID
        self.userID = userID
        self.campaignID = campaignID
        self.messageID = messageID
        self.now = now
        self.caps = caps
        self.campaignCaps = campaignCaps
        self.notAfter = notAfter
    }

    /// The longest period of its caps: counted sends older than
    /// `now - lookBack` cannot matter to it.
    public var lookBack: Int64 { (caps + campaignCaps).map(\.periodMilliseconds).max() ?? 0 }
}

/// `PolicyLedger.reserveCountedSend`'s answer.
public enum CapAnswer: Sendable, Hashable {
    /// Counted (now, or earlier for a message already counted) at this instant.
    case reserved(at: Int64)
    /// Not now: every cap allows one more at this instant (before `notAfter`).
    case heldUntil(Int64)
    /// No instant before `notAfter` is allowed.
    case exhausted
}

/// A send that reached its user (`PolicyLedger.recordCountedSend`).
public struct CountedSend: Sendable, Hashable {
    public var bundleID: String
    public var userID: String
    public var campaignID: String
    public var messageID: String
    /// When it counts (milliseconds).
    public var at: Int64

    public init(bundleID: String, userID: String, campaignID: String, messageID: String, at: Int64) {
        self.bundleID = bundleID
        self.userID = userID
        self.campaignID = campaignID
        self.messageID = messageID
        self.at = at
    }
}

/// Send slots booked by `PolicyLedger.takeThrottleSlots`: slot `i` (0 ≤ i <
/// `count`) is at `startMicros + i × spacingMicros`.
public struct ThrottleGrant: Sendable, Hashable {
    /// The first slot, in microseconds since the epoch.
    public var startMicros: Int64
    /// Between two slots, in microseconds.
    public var spacingMicros: Int64
    /// Slots booked (0: none free within the horizon; retry at `retryAt`).
    public var count: Int

    public init(startMicros: Int64, spacingMicros: Int64, count: Int) {
        self.startMicros = startMicros
        self.spacingMicros = spacingMicros
        self.count = count
    }

    /// Slot `index`, in microseconds.
    public func microseconds(of index: Int) -> Int64 { startMicros + Int64(index) * spacingMicros }

    /// Slot `index` in milliseconds, rounded up (never before the slot).
    public func milliseconds(of index: Int) -> Int64 { ThrottleSchedule.millisecondsRoundingUp(microseconds(of: index)) }

    /// The instant after the last slot: the bundle's next free slot when
    /// nothing was booked after this grant.
    public var endMicros: Int64 { microseconds(of: count) }

    /// With no slot granted, when the next call can book one
    /// (milliseconds): the first free slot comes within the horizon then.
    public var retryAt: Int64 {
        ThrottleSchedule.millisecondsRoundingUp(startMicros - ThrottleSchedule.horizonMicros + 1)
    }
}
