import HeraldStorage
import HeraldTestSupport
import Synchronization
import Testing

@testable import HeraldService

/// A ledger that hands every call but the reservations to `base`.
private protocol ForwardingLedger: PolicyLedger {
    var base: any PolicyLedger { get }
}

extension ForwardingLedger {
    func recordCountedSend(_ send: CountedSend) async throws -> Bool { try await base.recordCountedSend(send) }
    func releaseCountedSend(bundleID: String, messageID: String) async throws -> Bool {
        try await base.releaseCountedSend(bundleID: bundleID, messageID: messageID)
    }
    func countedSends(bundleID: String, userID: String, campaignID: String?, since: Int64) async throws -> [Int64] {
        try await base.countedSends(bundleID: bundleID, userID: userID, campaignID: campaignID, since: since)
    }
    func pruneCountedSends(before cutoff: Int64, limit: Int) async throws -> Int {
        try await base.pruneCountedSends(before: cutoff, limit: limit)
    }
    func takeThrottleSlots(bundleID: String, ratePerSecond: Int, count: Int, now: Int64) async throws -> ThrottleGrant {
        try await base.takeThrottleSlots(bundleID: bundleID, ratePerSecond: ratePerSecond, count: count, now: now)
    }
    func returnThrottleSlots(bundleID: String, grant: ThrottleGrant, unused: Int) async throws -> Bool {
        try await base.returnThrottleSlots(bundleID: bundleID, grant: grant, unused: unused)
    }
}

/// A ledger that counts its batch calls and can be told to fail.
private final class CountingLedger: ForwardingLedger {
    let store = InMemoryStore()
    let batches = Mutex<[Int]>([])
    let failing = Atomic<Bool>(false)
    var base: any PolicyLedger { store }

    struct Down: Error {}

    func reserveCountedSends(_ reservations: [CapReservation]) async throws -> [CapAnswer] {
        batches.withLock { $0.append(reservations.count) }
        if failing.load(ordering: .relaxed) { throw Down() }
        return try await store.reserveCountedSends(reservations)
    }
}

/// A ledger shared with another replica that always holds "busy-user"'s
/// lock: that user's reservations are busy unless they wait. Records each
/// call's flags for that user.
private final class BusyLedger: ForwardingLedger {
    let ledger = CountingLedger()
    let busyUserFlags = Mutex<[Bool]>([])
    var base: any PolicyLedger { ledger }

    func reserveCountedSends(_ reservations: [CapReservation]) async throws -> [CapAnswer] {
        try await ledger.reserveCountedSends(reservations)
    }
    func reserveCountedSends(_ reservations: [CapReservation], waitingIfBusy: [Bool]) async throws -> [CapAnswer?] {
        let busy = zip(reservations, waitingIfBusy).map { $0.userID == "busy-user" && !$1 }
        busyUserFlags.withLock { flags in
            flags += zip(reservations, waitingIfBusy).filter { $0.0.userID == "busy-user" }.map(\.1)
        }
        let granted = zip(reservations, busy).filter { !$1 }.map(\.0)
        var answers = try await ledger.reserveCountedSends(granted).makeIterator()
        return busy.map { $0 ? nil : answers.next() }
    }
}

@Suite("Cap reservations batched across concurrent pushes", .timeLimit(.minutes(1)))
struct ReservationBatcherTests {
    static let hour: Int64 = 3_600_000

    static func reservation(_ id: String) -> CapReservation {
        CapReservation(bundleID: "com.example.app", userID: "user-1", campaignID: "c", messageID: id, now: 1_000_000,
                       caps: [CapLimit(count: 3, periodMilliseconds: hour)], campaignCaps: [], notAfter: 1_000_000 + 24 * hour)
    }

    @Test func aHundredConcurrentReservationsUnderCapThreeReserveExactlyThreeInFewBatches() async throws {
        let ledger = CountingLedger()
        let batcher = ReservationBatcher(ledger: ledger)
        let answers = try await withThrowingTaskGroup(of: CapAnswer.self) { group in
            for i in 0..<100 { group.addTask { try await batcher.reserve(Self.reservation("m\(i)")) } }
            var all: [CapAnswer] = []
            for try await answer in group { all.append(answer) }
            return all
        }
        #expect(answers.filter { if case .reserved = $0 { true } else { false } }.count == 3)
        #expect(answers.filter { $0 == .heldUntil(1_000_000 + Self.hour) }.count == 97)
        let batches = ledger.batches.withLock { $0 }
        #expect(batches.reduce(0, +) == 100)
        #expect(batches.allSatisfy { $0 <= ReservationBatcher.batchLimit })
        // Idempotent by message: asked again, the same three are reserved.
        #expect(try await batcher.reserve(Self.reservation("m0")) != .exhausted)
    }

    /// A user another replica keeps busy: its reservation is asked again
    /// in the next batches, then waits for the lock (no starvation), and is
    /// answered; the other users' reservations are answered at once.
    @Test func aReservationKeptBusyIsAskedAgainThenWaitsAndIsAnswered() async throws {
        let ledger = BusyLedger()
        let batcher = ReservationBatcher(ledger: ledger)
        let busy = CapReservation(
            bundleID: "com.example.app", userID: "busy-user", campaignID: "c", messageID: "busy-message", now: 1_000_000,
            caps: [CapLimit(count: 3, periodMilliseconds: Self.hour)], campaignCaps: [], notAfter: 1_000_000 + 24 * Self.hour)
        let answers = try await withThrowingTaskGroup(of: (String, CapAnswer).self) { group in
            group.addTask { ("busy", try await batcher.reserve(busy)) }
            for i in 0..<20 { group.addTask { ("m\(i)", try await batcher.reserve(Self.reservation("m\(i)"))) } }
            return try await group.reduce(into: [String: CapAnswer]()) { $0[$1.0] = $1.1 }
        }
        #expect(answers.count == 21)
        #expect(answers["busy"] == .reserved(at: 1_000_000))
        #expect(answers.values.filter { if case .reserved = $0 { true } else { false } }.count == 4)
        // Busy twice (ReservationBatcher.busyLimit), then waited for the lock.
        #expect(ledger.busyUserFlags.withLock { $0 } == Array(repeating: false, count: ReservationBatcher.busyLimit) + [true])
        #expect(try await ledger.countedSends(bundleID: "com.example.app", userID: "busy-user", campaignID: nil, since: 0) == [1_000_000])
    }

    @Test func aFailedBatchFailsEachOfItsReservationsAndTheNextBatchWorks() async throws {
        let ledger = CountingLedger()
        let batcher = ReservationBatcher(ledger: ledger)
        ledger.failing.store(true, ordering: .relaxed)
        await #expect(throws: CountingLedger.Down.self) { try await batcher.reserve(Self.reservation("a")) }
        ledger.failing.store(false, ordering: .relaxed)
        #expect(try await batcher.reserve(Self.reservation("b")) == .reserved(at: 1_000_000))
    }
}
