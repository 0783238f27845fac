import Foundation
import HeraldCore
import Synchronization
import Testing

@testable import HeraldService
@testable import HeraldStorage

/// A due batch through `Dispatcher.dispatch(batch:leases:)`, against the real
/// SQLite store and the bundled simulator (`DispatcherTests.rig`).
@Suite("Dispatcher batches", .timeLimit(.minutes(1)))
struct DispatcherBatchTests {
    /// Leases that count their `finish()`.
    final class Finished: Sendable {
        let count = Atomic<Int>(0)

        func leases(_ n: Int) -> [DispatchLease] {
            (0..<n).map { _ in DispatchLease(slots: nil) { self.count.add(1, ordering: .relaxed) } }
        }
    }

    @Test func aBatchSendsOnlyWhatIsStillWaitingAndGivesEveryLeaseBack() async throws {
        let rig = try await DispatcherTests.rig()
        defer { Task { await rig.close() } }
        try await DispatcherTests.register(rig)
        let first = try await DispatcherTests.schedule(rig, key: "one", ttl: nil)
        let second = try await DispatcherTests.schedule(rig, key: "two", ttl: nil)
        let cancelled = try await DispatcherTests.schedule(rig, key: "cancel-me", ttl: nil)
        _ = try await rig.store.cancel(
            bundleID: DispatcherTests.bundle, platform: .ios, userID: "u1", campaignID: "c1", idempotencyKey: "cancel-me",
            now: DispatcherTests.due - 500)
        let superseded = try await DispatcherTests.schedule(rig, key: "two-again", ttl: nil)
        let replacement = try await DispatcherTests.schedule(rig, key: "two-again", ttl: nil)
        let claimedElsewhere = try await DispatcherTests.schedule(rig, key: "in-flight", ttl: nil)
        _ = try #require(try await rig.store.claim(id: claimedElsewhere.id, from: .scheduled, now: DispatcherTests.due))

        let ids = [first.id, cancelled.id, superseded.id, claimedElsewhere.id, second.id, replacement.id]
        let finished = Finished()
        await rig.dispatcher.dispatch(batch: ids, leases: finished.leases(ids.count))

        #expect(finished.count.load(ordering: .relaxed) == ids.count)
        #expect(rig.gateway.simulator?.deliveredCount == 3)
        for id in [first.id, second.id, replacement.id] {
            let sent = try #require(try await rig.store.message(id: id))
            #expect(sent.state == .sent && !sent.isSending)
            #expect(try await rig.store.outcomes(messageID: id).map(\.kind) == [.sent])
        }
        #expect(try await rig.store.message(id: cancelled.id)?.state == .cancelled)
        #expect(try await rig.store.message(id: superseded.id)?.state == .superseded)
        let other = try #require(try await rig.store.message(id: claimedElsewhere.id))
        #expect(other.state == .scheduled && other.isSending && other.attempts == 1)  // left to its claimer
        #expect(try await rig.store.outcomes(messageID: claimedElsewhere.id).isEmpty)
    }

    @Test func aMessageWhoseClaimFailsDoesNotHoldBackTheOthers() async throws {
        let rig = try await DispatcherTests.rig()
        defer { Task { await rig.close() } }
        try await DispatcherTests.register(rig)
        let first = try await DispatcherTests.schedule(rig, key: "one", ttl: nil)
        let broken = try await DispatcherTests.schedule(rig, key: "broken", ttl: nil)
        let last = try await DispatcherTests.schedule(rig, key: "three", ttl: nil)
        // A row the store cannot read back: its claim fails, so the batch's claim does.
        try await rig.store.write { db in
            try db.run("UPDATE messages SET delivery_method = 'carrier-pigeon' WHERE id = ?1") { try $0.bind(broken.id, at: 1) }
        }
        await #expect(throws: StoreError.self) { try await rig.store.claim(ids: [broken.id], now: DispatcherTests.due) }

        let ids = [first.id, broken.id, last.id]
        let finished = Finished()
        await rig.dispatcher.dispatch(batch: ids, leases: finished.leases(ids.count))

        #expect(finished.count.load(ordering: .relaxed) == ids.count)
        #expect(rig.gateway.simulator?.deliveredCount == 2)
        for id in [first.id, last.id] { #expect(try await rig.store.message(id: id)?.state == .sent) }
        // Its failed claim was undone: still waiting, nothing sent or recorded.
        try await rig.store.write { db in
            try db.run("UPDATE messages SET delivery_method = 'traditional' WHERE id = ?1") { try $0.bind(broken.id, at: 1) }
        }
        let waiting = try #require(try await rig.store.message(id: broken.id))
        #expect(waiting.state == .scheduled && !waiting.isSending && waiting.attempts == 0)
        #expect(try await rig.store.outcomes(messageID: broken.id).isEmpty)
    }

    @Test func aBatchOfManyEndsEveryPushAndWritesTheirEndsTogether() async throws {
        let rig = try await DispatcherTests.rig()
        defer { Task { await rig.close() } }
        try await DispatcherTests.register(rig)
        var ids: [String] = []
        for n in 0..<40 { ids.append(try await DispatcherTests.schedule(rig, key: "m\(n)", ttl: nil).id) }
        let before = rig.store.writeStats.writes
        await rig.dispatcher.dispatch(batch: ids, leases: Finished().leases(ids.count))
        #expect(rig.gateway.simulator?.deliveredCount == 40)
        for id in ids { #expect(try await rig.store.message(id: id)?.state == .sent) }
        // One claim, the hand-over marks' batches, and the ends' batches: one
        // write per message each would be 80 plus the marks.
        let writes = rig.store.writeStats.writes - before
        #expect(writes <= 1 + 40 + 20, "writes: \(writes)")
    }
}
