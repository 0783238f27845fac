/// The order in which a shared store's due messages are claimed (SPEC
/// §4b: one bundle's backlog never delays another bundle's due pushes;
/// transactional first within a bundle): round-robin over the bundles, each
/// bundle's messages in its own order (transactional first, then by due
/// time, ties by id), each bundle capped by its quota. PostgreSQL computes
/// the same order in SQL (`claimDue`); the in-memory store and the tests
/// use this one.
public enum DueTurns {
    /// A bundle's own order: transactional first, then due time, then id.
    public static func precedes(_ a: StoredMessage, _ b: StoredMessage) -> Bool {
        if a.transactional != b.transactional { return a.transactional }
        return (a.dueAt, a.id) < (b.dueAt, b.id)
    }

    /// At most `limit` of `due`: turn `t` of every bundle before turn
    /// `t + 1` of any (bundles by id within a turn, then each bundle's
    /// order), a bundle taking at most `quota[bundle]` (absent: no cap).
    public static func pick(_ due: [StoredMessage], limit: Int, quota: [String: Int] = [:]) -> [StoredMessage] {
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
            if a.message.bundleID != b.message.bundleID { return a.message.bundleID < b.message.bundleID }
            return precedes(a.message, b.message)
        }
        return ranked.prefix(max(0, limit)).map(\.message)
    }
}
