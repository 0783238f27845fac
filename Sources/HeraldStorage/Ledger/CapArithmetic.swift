/// The caps' arithmetic, shared by every store so that they answer alike:
/// given the instants of a user's counted sends, is one more allowed at
/// `now`, and if not, from when.
///
/// A cap (N, P) allows a send at `t` when fewer than N counted sends lie
/// after `t - P` — the rolling window `(t - P, t]` and, to stay exact when
/// clocks of replicas differ a little, any recorded after `t`. That count
/// only falls as `t` grows, so the earliest allowed `t` is the one where
/// the N-th most recent instant leaves the window: `t = s_N + P`. Every
/// window of length P that holds `t` then holds at most N - 1 earlier sends
/// plus this one: N + k eligible messages never make more than N counted
/// sends in any period.
public enum CapArithmetic {
    /// The earliest instant at or after `now` that `cap` allows one more
    /// counted send at, given `instants` (any order); nil when it allows none.
    public static func earliestAllowed(_ cap: CapLimit, instants: [Int64], now: Int64) -> Int64? {
        guard cap.count > 0 else { return nil }
        guard cap.periodMilliseconds > 0, instants.count >= cap.count else { return now }
        let nthMostRecent = instants.sorted(by: >)[cap.count - 1]
        return max(now, saturatingAdd(nthMostRecent, cap.periodMilliseconds))
    }

    /// What `reserveCountedSend` answers for a message not yet counted:
    /// `.reserved(at: now)` means "record it now". `userInstants` are the
    /// user's counted sends (every campaign), `campaignInstants` those of
    /// the reservation's campaign; both may hold more than the look-back.
    public static func answer(for reservation: CapReservation, userInstants: [Int64], campaignInstants: [Int64]) -> CapAnswer {
        var earliest = reservation.now
        for cap in reservation.caps {
            guard let t = earliestAllowed(cap, instants: userInstants, now: reservation.now) else { return .exhausted }
            earliest = max(earliest, t)
        }
        for cap in reservation.campaignCaps {
            guard let t = earliestAllowed(cap, instants: campaignInstants, now: reservation.now) else { return .exhausted }
            earliest = max(earliest, t)
        }
        if earliest >= reservation.notAfter { return .exhausted }
        return earliest == reservation.now ? .reserved(at: reservation.now) : .heldUntil(earliest)
    }

    /// `a + b`, held at `Int64.max` instead of trapping (a hostile period).
    public static func saturatingAdd(_ a: Int64, _ b: Int64) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b > 0 ? .max : .min) : sum
    }
}

extension CapArithmetic {
    /// Answers `batch` in order, as `reserveCountedSend` would one by one:
    /// `counted` is what the store read under its lock — each batch
    /// message's own row, if counted, and each batch user's counted sends
    /// after its earliest look-back (duplicates allowed). A reservation
    /// made earlier in the batch counts for the later ones (and a message
    /// named twice is counted once). Returns the answers in `batch`'s order
    /// and the sends to insert.
    public static func answer(batch: [CapReservation], counted: [CountedSend]) -> (answers: [CapAnswer], inserts: [CountedSend]) {
        struct MessageKey: Hashable { var bundleID, messageID: String }
        struct UserKey: Hashable { var bundleID, userID: String }
        var byMessage: [MessageKey: CountedSend] = [:]
        for send in counted { byMessage[MessageKey(bundleID: send.bundleID, messageID: send.messageID)] = send }
        var byUser: [UserKey: [CountedSend]] = [:]
        for send in byMessage.values { byUser[UserKey(bundleID: send.bundleID, userID: send.userID), default: []].append(send) }
        var answers: [CapAnswer] = [], inserts: [CountedSend] = []
        answers.reserveCapacity(batch.count)
        for r in batch {
            let message = MessageKey(bundleID: r.bundleID, messageID: r.messageID)
            if let send = byMessage[message] {
                answers.append(.reserved(at: send.at))
                continue
            }
            let user = UserKey(bundleID: r.bundleID, userID: r.userID)
            let since = saturatingAdd(r.now, -r.lookBack)
            let rows = (byUser[user] ?? []).filter { $0.at > since }
            let answer = answer(for: r, userInstants: rows.map(\.at), campaignInstants: rows.filter { $0.campaignID == r.campaignID }.map(\.at))
            if case .reserved(let at) = answer {
                let send = CountedSend(bundleID: r.bundleID, userID: r.userID, campaignID: r.campaignID, messageID: r.messageID, at: at)
                byMessage[message] = send
                byUser[user, default: []].append(send)
                inserts.append(send)
            }
            answers.append(answer)
        }
        return (answers, inserts)
    }

    /// Each (bundle, user) of `batch` with its earliest look-back instant
    /// (the reads a batch needs), in a stable order.
    public static func lookBacks(of batch: [CapReservation]) -> [(bundleID: String, userID: String, since: Int64)] {
        var order: [String] = [], since: [String: (String, String, Int64)] = [:]
        for r in batch {
            let key = r.bundleID + "\n" + r.userID
            let value = saturatingAdd(r.now, -r.lookBack)
            if let known = since[key] {
                since[key] = (r.bundleID, r.userID, min(known.2, value))
            } else {
                order.append(key)
                since[key] = (r.bundleID, r.userID, value)
            }
        }
        return order.map { since[$0]! }.map { (bundleID: $0.0, userID: $0.1, since: $0.2) }
    }
}
