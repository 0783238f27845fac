/// The order in which a shared store's due messages are claimed (SPEC
/// §4b: one bundle's backlog never delays another bundle's due pushes;
/// transactional first within a bundle): round-robin over the bundles, each
/// bundle's messages in its own order (transactional first, then by due
/// time, ties by id), each bundle capped by its quota. Within a turn the
/// bundles go in id order starting after `after` (the last bundle the
/// previous poll claimed from) and wrapping: with more bundles due than a
/// poll takes, the ones past the limit go first next time instead of
/// waiting behind the same lower ids at every poll. PostgreSQL computes
/// the same order in SQL (`claimDue`); the in-memory store and the tests
/// use this one.
public enum DueTurns {
    /// A bundle's own order: transactional first, then due time, then id.
    public static func precedes(_ a: StoredMessage, _ b: StoredMessage) -> Bool {
        if a.transactional != b.transactional { return a.transactional }
        return (a.dueAt, a.id) < (b.dueAt, b.id)
    }

    /// At most `limit` of `due`: turn `t` of every bundle before turn
    /// `t + 1` of any (within a turn, bundles after `after` by id, then the
    /// others by id; then each bundle's order), a bundle taking at most
    /// `quota[bundle]` (absent: no cap).
    public static func pick(
        _ due: [StoredMessage], limit: Int, quota: [String: Int] = [:], after: String? = nil
    ) -> [StoredMessage] {
        var lanes: [String: [StoredMessage]] = [:]
        for message in due { lanes[message.bundleID, default: []].append(message) }
        var ranked: [(turn: Int, message: StoredMessage)] = []
        for (bundle, messages) in lanes {
            let cap = max(0, quota[bundle] ?? Int.max)
            for (turn, message) in messages.sorted(by: precedes).prefix(cap).enumerated() {
                ranked.append((turn, message))
            }
        }
        ranked.sort { a, b in
            if a.turn != b.turn { return a.turn < b.turn }
            if a.message.bundleID != b.message.bundleID {
                return rotated(a.message.bundleID, after: after) < rotated(b.message.bundleID, after: after)
            }
            return precedes(a.message, b.message)
        }
        return ranked.prefix(max(0, limit)).map(\.message)
    }

    /// A bundle's place within a turn: those after `after` (0) first.
    /// PostgreSQL orders by the same pair (`coalesce(b <= after, false), b`).
    static func rotated(_ bundle: String, after: String?) -> (Int, String) {
        (after.map { bundle <= $0 ? 1 : 0 } ?? 0, bundle)
    }
}
