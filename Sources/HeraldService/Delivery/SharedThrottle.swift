import HeraldStorage

/// The polling scheduler's side of `max-per-second` on a store shared by
/// replicas (SPEC §4b: "all replicas together"). The slots are booked in the
/// store (``PolicyLedger/takeThrottleSlots(bundleID:ratePerSecond:count:now:)``,
/// one row per bundle, at most ``ThrottleSchedule/horizonMicros`` ahead);
/// this struct only remembers, per bundle, the next free slot the last grant
/// showed, so that a poll claims no more of a bundle than the slots it can
/// still hope to book (its quota; 0 while the horizon is full), and what a
/// claim outside its grant costs is rare (another replica booked first).
/// Pure: the clock and the grants are passed in.
struct SharedThrottle {
    /// Each throttled bundle's next free slot (µs since the epoch), as last seen.
    private var nextFree: [String: Int64] = [:]

    /// The claims each throttled bundle may take at `nowMicros`: the slots
    /// left within the horizon after its next free slot (at most `limit`).
    /// Bundles no longer throttled are forgotten.
    mutating func quota(rates: [String: Int], nowMicros: Int64, limit: Int) -> [String: Int] {
        nextFree = nextFree.filter { rates[$0.key] != nil }
        var quota: [String: Int] = [:]
        for (bundle, rate) in rates {
            // What the ledger would grant now, by its own arithmetic.
            quota[bundle] = ThrottleSchedule.grant(
                nextFree: nextFree[bundle], nowMicros: nowMicros, ratePerSecond: rate, count: max(limit, 0)).grant.count
        }
        return quota
    }

    /// What a booking of `bundle` answered: its next free slot is after
    /// the grant's last, or (nothing granted) the grant's start.
    mutating func booked(_ bundle: String, _ grant: ThrottleGrant) {
        nextFree[bundle] = grant.count > 0 ? grant.endMicros : grant.startMicros
    }

    /// The grant of a store without a shared ledger (one replica): booked
    /// here, from the remembered next free slot.
    mutating func bookLocally(_ bundle: String, rate: Int, count: Int, nowMicros: Int64) -> ThrottleGrant {
        let (grant, next) = ThrottleSchedule.grant(nextFree: nextFree[bundle], nowMicros: nowMicros, ratePerSecond: rate, count: count)
        nextFree[bundle] = next
        return grant
    }
}

/// A poll's claims after the throttle: the messages of unthrottled bundles
/// (dispatched at once), each throttled bundle's granted messages with the
/// instant of their slot (ms), and the claims no slot was granted for
/// (given back: due again for the next poll).
struct PacedClaims {
    var free: [StoredMessage] = []
    var paced: [(at: Int64, message: StoredMessage)] = []
    var excess: [StoredMessage] = []
}
