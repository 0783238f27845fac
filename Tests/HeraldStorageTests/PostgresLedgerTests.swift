import HeraldCore
@testable import HeraldPostgres
import Synchronization
import Testing
@testable import HeraldStorage

/// The policy ledger across replicas (SPEC §4b: caps exact "across
/// replicas", the throttle "all replicas together"): two `PostgresStore`s on
/// one schema, each its own pool and replica id, calling at once.
@Suite("PostgreSQL policy ledger across replicas", .storeCaseLimit,
       .enabled(if: PostgresTestDatabase.isEnabled, PostgresTestDatabase.skipReason))
struct PostgresLedgerTests {
    /// Opens replicas "a" and "b" on one fresh schema, runs `body`, closes them.
    func withTwoReplicas(_ body: (PostgresStore, PostgresStore) async throws -> Void) async throws {
        try await PostgresTestDatabase.withSchema { configuration in
            var stores: [PostgresStore] = []
            do {
                for name in ["a", "b"] {
                    var replica = configuration
                    replica.replicaID = name
                    stores.append(try await PostgresStore.open(replica))
                }
                try await body(stores[0], stores[1])
            } catch {
                for store in stores { await closeInTime(store) }
                throw error
            }
            for store in stores { await closeInTime(store) }
        }
    }

    @Test func fiftyConcurrentReservationsOnTwoReplicasReserveExactlyTheCap() async throws {
        try await withTwoReplicas { a, b in
            let hour: Int64 = 3_600_000
            let answers = try await withThrowingTaskGroup(of: (Int, CapAnswer).self) { group in
                for i in 0..<50 {
                    let replica = i % 2 == 0 ? a : b
                    group.addTask {
                        (i, try await replica.reserveCountedSend(LedgerContractTests.reservation("r\(i)", at: now + Int64(i % 7))))
                    }
                }
                return try await group.reduce(into: [Int: CapAnswer]()) { $0[$1.0] = $1.1 }
            }
            let reserved = answers.values.compactMap { if case .reserved(let at) = $0 { at } else { nil } }
            #expect(reserved.count == 3)
            let oldest = try #require(reserved.min())
            #expect(answers.values.filter { $0 == .heldUntil(oldest + hour) }.count == 47)
            #expect(try await a.countedSends(bundleID: "com.example.app", userID: "user-1", campaignID: nil, since: 0).sorted()
                    == reserved.sorted())
            // Each replica sees the other's: a retry of a counted message, on
            // the other replica, is its first instant; a held one is still held.
            for i in 0..<50 {
                let retry = try await (i % 2 == 0 ? b : a).reserveCountedSend(LedgerContractTests.reservation("r\(i)", at: now + 100))
                if case .reserved = answers[i] {
                    #expect(retry == answers[i])
                } else {
                    #expect(retry == .heldUntil(oldest + hour))
                }
            }
            #expect(try await b.countedSends(bundleID: "com.example.app", userID: "user-1", campaignID: nil, since: 0).count == 3)
        }
    }

    /// Twenty batches at once, ten per replica, each reserving for the same
    /// ten users in a different order: no deadlock (the locks are taken in
    /// key order), and each user gets exactly its cap.
    @Test func overlappingBatchesOnTwoReplicasReserveExactlyTheCapPerUser() async throws {
        try await withTwoReplicas { a, b in
            let answers = try await withThrowingTaskGroup(of: [CapReservation: CapAnswer].self) { group in
                for batch in 0..<20 {
                    let replica = batch % 2 == 0 ? a : b
                    group.addTask {
                        let users = (0..<10).map { (($0 * 7 + batch * 3) % 10) }
                        let reservations = users.map {
                            LedgerContractTests.reservation("b\(batch)-u\($0)", at: now + Int64(batch), user: "user-\($0)")
                        }
                        let answers = try await replica.reserveCountedSends(reservations)
                        return Dictionary(uniqueKeysWithValues: zip(reservations, answers))
                    }
                }
                return try await group.reduce(into: [CapReservation: CapAnswer]()) { $0.merge($1) { first, _ in first } }
            }
            #expect(answers.count == 200)
            for user in 0..<10 {
                let mine = answers.filter { $0.key.userID == "user-\(user)" }.values
                #expect(mine.filter { if case .reserved = $0 { true } else { false } }.count == 3, "user-\(user)")
                #expect(try await b.countedSends(bundleID: "com.example.app", userID: "user-\(user)", campaignID: nil, since: 0).count == 3)
            }
        }
    }

    // MARK: Busy users (try-locks)

    /// A user whose lock another transaction holds (as a replica's batch
    /// would) is busy for a batch that does not wait: answered nil, nothing
    /// reserved for it, and the rest of the batch is answered; once the
    /// lock is released, the same reservation is granted.
    @Test func aUserLockedElsewhereIsBusyWhileTheRestOfTheBatchIsReserved() async throws {
        try await withTwoReplicas { a, b in
            // Users no other test names: advisory locks are the database's, not the schema's.
            let held = LedgerContractTests.reservation("held", at: now, user: "locked-user")
            let free = LedgerContractTests.reservation("free", at: now, user: "free-user")
            let alsoHeld = LedgerContractTests.reservation("held-2", at: now + 1, user: "locked-user")
            let key = PostgresStore.ledgerLockKey(bundleID: "com.example.app", userID: "locked-user")
            let answers = try await b.transaction { connection in
                _ = try await PostgresStore.run(connection, "SELECT pg_advisory_xact_lock(\(key)) IS NOT NULL", logger: b.logger)
                return try await a.reserveCountedSends([held, free, alsoHeld], waitingIfBusy: [false, false, false])
            }
            #expect(answers == [nil, .reserved(at: now), nil])
            #expect(try await a.countedSends(bundleID: "com.example.app", userID: "locked-user", campaignID: nil, since: 0).isEmpty)
            #expect(try await a.countedSends(bundleID: "com.example.app", userID: "free-user", campaignID: nil, since: 0) == [now])
            // Released (the holder committed): granted, and the batch's order kept.
            #expect(try await a.reserveCountedSends([held, alsoHeld], waitingIfBusy: [false, false])
                    == [.reserved(at: now), .reserved(at: now + 1)])
            // Every reservation answered busy at once: nothing reserved, nothing thrown.
            let none = try await b.transaction { connection in
                _ = try await PostgresStore.run(connection, "SELECT pg_advisory_xact_lock(\(key)) IS NOT NULL", logger: b.logger)
                return try await a.reserveCountedSends(
                    [LedgerContractTests.reservation("late", at: now + 2, user: "locked-user")], waitingIfBusy: [false])
            }
            #expect(none == [nil])
            #expect(try await b.countedSends(bundleID: "com.example.app", userID: "locked-user", campaignID: nil, since: 0) == [now, now + 1])
        }
    }

    /// N + k reservations per user from batches on both replicas at once,
    /// none waiting at first: each answered busy is asked again in the
    /// caller's next call, waiting after two busy answers (as the
    /// dispatcher's `ReservationBatcher` does). Every reservation is
    /// answered (none starves, none is lost) and exactly N are counted per user.
    @Test func busyRetriesOnTwoReplicasReserveExactlyTheCapPerUserAndAnswerEveryReservation() async throws {
        try await withTwoReplicas { a, b in
            let answers = try await withThrowingTaskGroup(of: [CapReservation: CapAnswer].self) { group in
                for caller in 0..<8 {
                    let replica = caller % 2 == 0 ? a : b
                    group.addTask {
                        var answered: [CapReservation: CapAnswer] = [:]
                        var pending: [(CapReservation, busy: Int)] = []
                        var round = 0
                        while round < 5 || !pending.isEmpty {
                            if round < 5 {
                                pending += (0..<10).map { user in
                                    (LedgerContractTests.reservation("c\(caller)-r\(round)-u\(user)", at: now + Int64(round), user: "user-\(user)"), 0)
                                }
                            }
                            round += 1
                            let asked = pending
                            let replies = try await replica.reserveCountedSends(asked.map(\.0), waitingIfBusy: asked.map { $0.busy >= 2 })
                            pending = []
                            for ((reservation, busy), reply) in zip(asked, replies) {
                                if let reply { answered[reservation] = reply } else { pending.append((reservation, busy + 1)) }
                            }
                            #expect(round <= 8, "a busy reservation waits after two busy answers")
                        }
                        return answered
                    }
                }
                return try await group.reduce(into: [CapReservation: CapAnswer]()) { $0.merge($1) { first, _ in first } }
            }
            #expect(answers.count == 8 * 5 * 10)
            for user in 0..<10 {
                let mine = answers.filter { $0.key.userID == "user-\(user)" }.values
                #expect(mine.filter { if case .reserved = $0 { true } else { false } }.count == 3, "user-\(user)")
                #expect(try await b.countedSends(bundleID: "com.example.app", userID: "user-\(user)", campaignID: nil, since: 0).count == 3)
            }
        }
    }

    /// Two replicas, four callers each, on one virtual clock advancing 20 ms
    /// a call over 12 s, at R = 200: the slots of both are never closer than
    /// 1/R and any 10 s holds R × 10 within 10 %.
    @Test func twoReplicasTakingSlotsAtOnceKeepTheRateTogether() async throws {
        try await withTwoReplicas { a, b in
            let clock = VirtualTicks()
            let slots = try await withThrowingTaskGroup(of: [Int64].self) { group in
                for caller in 0..<8 {
                    let replica = caller % 2 == 0 ? a : b
                    group.addTask {
                        var mine: [Int64] = []
                        while true {
                            let tick = clock.next()
                            guard tick <= 600 else { return mine }
                            let grant = try await replica.takeThrottleSlots(
                                bundleID: "com.example.app", ratePerSecond: 200, count: 8, now: now + tick * 20)
                            mine += (0..<grant.count).map(grant.microseconds(of:))
                        }
                    }
                }
                return try await group.reduce(into: [Int64]()) { $0 += $1 }
            }
            ThrottleRate.expect(slots, ratePerSecond: 200, from: now * 1_000 + 20_000, seconds: 12)
        }
    }
}

/// A virtual clock shared by concurrent callers: each call takes the next tick.
final class VirtualTicks: Sendable {
    private let ticks = Atomic<Int64>(0)

    func next() -> Int64 { ticks.add(1, ordering: .relaxed).newValue }
}
