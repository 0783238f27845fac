import HeraldCore
import Testing
@testable import HeraldStorage

/// The claim order of shared stores (`DueTurns`), pure.
@Suite("Due turns")
struct DueTurnsTests {
    static func m(_ id: String, _ bundle: String, due: Int64, tx: Bool = false) -> StoredMessage {
        var message = makeMessage(id: id, bundleID: bundle, key: id, dueAt: due)
        message.transactional = tx
        return message
    }

    // MARK: Hostile first

    @Test func emptyNegativeAndZeroAreNothing() {
        #expect(DueTurns.pick([], limit: 10).isEmpty)
        #expect(DueTurns.pick([Self.m("a", "x", due: 1)], limit: 0).isEmpty)
        #expect(DueTurns.pick([Self.m("a", "x", due: 1)], limit: -5).isEmpty)
        #expect(DueTurns.pick([Self.m("a", "x", due: 1)], limit: 10, quota: ["x": -1]).isEmpty)
    }

    /// Round-robin by turn, bundles by id within a turn, each bundle's own
    /// order (transactional, due, id), quotas per bundle.
    @Test func turnsThenBundlesThenEachBundlesOrder() {
        let due = [
            Self.m("a3", "a", due: 3), Self.m("a1", "a", due: 1), Self.m("a2", "a", due: 2), Self.m("atx", "a", due: 9, tx: true),
            Self.m("b1", "b", due: 5), Self.m("c1", "c", due: 0), Self.m("c0", "c", due: 0),
        ]
        #expect(DueTurns.pick(due, limit: 100).map(\.id) == ["atx", "b1", "c0", "a1", "c1", "a2", "a3"])
        #expect(DueTurns.pick(due, limit: 3).map(\.id) == ["atx", "b1", "c0"])
        #expect(DueTurns.pick(due, limit: 100, quota: ["a": 2, "c": 0]).map(\.id) == ["atx", "b1", "a1"])
    }

    /// Within a turn, bundles after `after` go first, then the others
    /// (wrapping), each bundle's order kept: a poll that cannot take every
    /// bundle's turn starts the next one where it stopped.
    @Test func turnsStartAfterTheLastBundleServed() {
        let due = ["a", "b", "c", "d", "e"].flatMap { bundle in
            (1...3).map { Self.m("\(bundle)\($0)", bundle, due: Int64($0)) }
        }
        #expect(DueTurns.pick(due, limit: 2).map(\.id) == ["a1", "b1"])
        #expect(DueTurns.pick(due, limit: 2, after: "b").map(\.id) == ["c1", "d1"])
        #expect(DueTurns.pick(due, limit: 2, after: "d").map(\.id) == ["e1", "a1"])
        #expect(DueTurns.pick(due, limit: 7, after: "c").map(\.id) == ["d1", "e1", "a1", "b1", "c1", "d2", "e2"])
        // An `after` past every bundle, or before all of them: plain id order.
        #expect(DueTurns.pick(due, limit: 3, after: "zzz").map(\.id) == ["a1", "b1", "c1"])
        #expect(DueTurns.pick(due, limit: 3, after: "").map(\.id) == ["a1", "b1", "c1"])
    }
}
