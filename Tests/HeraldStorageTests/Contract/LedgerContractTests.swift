import HeraldCore
@testable import HeraldPostgres
import HeraldTestSupport
import Testing
@testable import HeraldStorage

/// The policy ledger (`PolicyLedger`, SPEC §4b "Frequency caps"): exact cap
/// reservations, idempotent by message, released on no reach; counted
/// sends recorded over the cap; the rolling window's boundary; retention.
/// Every case runs on SQLite, PostgreSQL and the in-memory store; two
/// PostgreSQL replicas at once are PostgresLedgerTests'.
@Suite("Store contract: the policy ledger's caps", .storeCaseLimit)
struct LedgerContractTests {
    static let hour: Int64 = 3_600_000

    /// A reservation of `messageID` for user-1 of com.example.app at `at`.
    static func reservation(
        _ messageID: String, at: Int64, user: String = "user-1", campaign: String = "welcome",
        caps: [CapLimit] = [CapLimit(count: 3, periodMilliseconds: hour)], campaignCaps: [CapLimit] = [],
        notAfter: Int64 = now + 24 * hour
    ) -> CapReservation {
        CapReservation(bundleID: "com.example.app", userID: user, campaignID: campaign, messageID: messageID, now: at,
                       caps: caps, campaignCaps: campaignCaps, notAfter: notAfter)
    }

    static func counted(_ messageID: String, at: Int64, user: String = "user-1", campaign: String = "welcome") -> CountedSend {
        CountedSend(bundleID: "com.example.app", userID: user, campaignID: campaign, messageID: messageID, at: at)
    }

    // MARK: Hostile first

    @Test(arguments: StoreKind.all) func exactlyNAreReservedAndTheNextIsHeldUntilTheFirstLeavesThePeriod(_ kind: StoreKind) async throws {
        try await withStore(kind) { store async throws in
            for i in 0..<3 {
                #expect(try await store.reserveCountedSend(Self.reservation("m\(i)", at: now + Int64(i))) == .reserved(at: now + Int64(i)))
            }
            // N + 1: held until the oldest of the three leaves (now, now + 1 h].
            #expect(try await store.reserveCountedSend(Self.reservation("m3", at: now + 10)) == .heldUntil(now + Self.hour))
            // That instant is the window's end, or later: no hold at all.
            #expect(try await store.reserveCountedSend(Self.reservation("m3", at: now + 10, notAfter: now + Self.hour)) == .exhausted)
            #expect(try await store.reserveCountedSend(Self.reservation("m3", at: now + 10, notAfter: now + Self.hour + 1))
                    == .heldUntil(now + Self.hour))
            // Held answers counted nothing; at its instant it is reserved, and the next waits for m1.
            #expect(try await store.countedSends(bundleID: "com.example.app", userID: "user-1", campaignID: nil, since: 0)
                    == [now, now + 1, now + 2])
            #expect(try await store.reserveCountedSend(Self.reservation("m3", at: now + Self.hour)) == .reserved(at: now + Self.hour))
            #expect(try await store.reserveCountedSend(Self.reservation("m4", at: now + Self.hour)) == .heldUntil(now + Self.hour + 1))
            // Another user and another bundle have caps of their own.
            #expect(try await store.reserveCountedSend(Self.reservation("m5", at: now + 20, user: "user-2")) == .reserved(at: now + 20))
            var other = Self.reservation("m6", at: now + 20)
            other.bundleID = "com.example.other"
            #expect(try await store.reserveCountedSend(other) == .reserved(at: now + 20))
        }
    }

    @Test(arguments: StoreKind.all) func fiftyConcurrentReservationsForOneUserReserveExactlyTheCap(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let answers = try await withThrowingTaskGroup(of: CapAnswer.self) { group in
                for i in 0..<50 {
                    group.addTask { try await store.reserveCountedSend(Self.reservation("c\(i)", at: now + Int64(i % 5))) }
                }
                return try await group.reduce(into: [CapAnswer]()) { $0.append($1) }
            }
            let reserved = answers.compactMap { if case .reserved(let at) = $0 { at } else { nil } }
            #expect(reserved.count == 3)
            // Each held one saw the three and waits for the oldest to leave the hour.
            let oldest = try #require(reserved.min())
            #expect(answers.filter { $0 == .heldUntil(oldest + Self.hour) }.count == 47)
            #expect(try await store.countedSends(bundleID: "com.example.app", userID: "user-1", campaignID: nil, since: 0).count == 3)
        }
    }

    @Test(arguments: StoreKind.all) func theCampaignCapAndTheUserCapHoldTogether(_ kind: StoreKind) async throws {
        try await withStore(kind) { store async throws in
            let campaignCap = [CapLimit(count: 1, periodMilliseconds: 2 * Self.hour)]
            func reserve(_ id: String, _ at: Int64, _ campaign: String) async throws -> CapAnswer {
                try await store.reserveCountedSend(Self.reservation(id, at: at, campaign: campaign, campaignCaps: campaignCap))
            }
            #expect(try await reserve("a1", now, "a") == .reserved(at: now))
            #expect(try await reserve("a2", now + 10, "a") == .heldUntil(now + 2 * Self.hour))  // the campaign's cap
            #expect(try await reserve("b1", now + 20, "b") == .reserved(at: now + 20))
            #expect(try await reserve("c1", now + 30, "c") == .reserved(at: now + 30))
            #expect(try await reserve("d1", now + 40, "d") == .heldUntil(now + Self.hour))  // the user's cap (3/1h)
            // Both bind: the later instant wins.
            #expect(try await reserve("a3", now + 50, "a") == .heldUntil(now + 2 * Self.hour))
            #expect(try await store.countedSends(bundleID: "com.example.app", userID: "user-1", campaignID: "a", since: 0) == [now])
        }
    }

    @Test(arguments: StoreKind.all) func aMessageIsCountedOnceHoweverOftenItIsReserved(_ kind: StoreKind) async throws {
        try await withStore(kind) { store async throws in
            let one = [CapLimit(count: 1, periodMilliseconds: Self.hour)]
            #expect(try await store.reserveCountedSend(Self.reservation("m1", at: now, caps: one)) == .reserved(at: now))
            // A resumed push asks again, later, with the cap full: its first instant.
            #expect(try await store.reserveCountedSend(Self.reservation("m1", at: now + 500, caps: one)) == .reserved(at: now))
            #expect(try await store.reserveCountedSend(Self.reservation("m1", at: now + 500, caps: [CapLimit(count: 0, periodMilliseconds: 1)]))
                    == .reserved(at: now))
            // A report of the same message keeps it counted once.
            #expect(try await store.recordCountedSend(Self.counted("m1", at: now + 600)) == false)
            #expect(try await store.countedSends(bundleID: "com.example.app", userID: "user-1", campaignID: nil, since: 0) == [now])
        }
    }

    @Test(arguments: StoreKind.all) func aReservationSurvivesARestartAndIsNotCountedAgain(_ kind: StoreKind) async throws {
        try await withRestartableStore(kind) { store, restart in
            let one = [CapLimit(count: 1, periodMilliseconds: Self.hour)]
            #expect(try await store.reserveCountedSend(Self.reservation("m1", at: now, caps: one)) == .reserved(at: now))
            let reopened = try await restart()
            #expect(try await reopened.reserveCountedSend(Self.reservation("m1", at: now + 5, caps: one)) == .reserved(at: now))
            #expect(try await reopened.reserveCountedSend(Self.reservation("m2", at: now + 5, caps: one)) == .heldUntil(now + Self.hour))
        }
    }

    /// The crash rule end to end: a message claimed and reserved, the store
    /// stopped mid-push (what a kill -9 leaves) and re-opened, recovered and
    /// claimed again: its resumed push finds its reservation, counted once,
    /// while another message of the user stays held.
    @Test(arguments: StoreKind.all) func aResumedPushAfterACrashFindsItsReservation(_ kind: StoreKind) async throws {
        try await withRestartableStore(kind) { store, restart in
            let one = [CapLimit(count: 1, periodMilliseconds: Self.hour)]
            _ = try await store.schedule(makeMessage(id: "m-crash", key: "k-crash", dueAt: now))
            #expect(try await store.claim(ids: ["m-crash"], now: now).map(\.id) == ["m-crash"])
            #expect(try await store.reserveCountedSend(Self.reservation("m-crash", at: now, caps: one)) == .reserved(at: now))
            let restarted = try await restart()
            #expect(try await restarted.recoverInterrupted(now: now + 1_000).resumed == ["m-crash"])
            #expect(try await restarted.claim(ids: ["m-crash"], now: now + 1_001).map(\.id) == ["m-crash"])
            #expect(try await restarted.reserveCountedSend(Self.reservation("m-crash", at: now + 1_001, caps: one)) == .reserved(at: now))
            #expect(try await restarted.reserveCountedSend(Self.reservation("m-other", at: now + 1_002, caps: one))
                    == .heldUntil(now + Self.hour))
            #expect(try await restarted.countedSends(bundleID: "com.example.app", userID: "user-1", campaignID: nil, since: 0) == [now])
        }
    }

    @Test(arguments: StoreKind.all) func aReleasedReservationGivesItsPlaceBack(_ kind: StoreKind) async throws {
        try await withStore(kind) { store async throws in
            let one = [CapLimit(count: 1, periodMilliseconds: Self.hour)]
            #expect(try await store.reserveCountedSend(Self.reservation("m1", at: now, caps: one)) == .reserved(at: now))
            #expect(try await store.reserveCountedSend(Self.reservation("m2", at: now + 1, caps: one)) == .heldUntil(now + Self.hour))
            #expect(try await store.releaseCountedSend(bundleID: "com.example.app", messageID: "m1"))
            #expect(try await store.releaseCountedSend(bundleID: "com.example.app", messageID: "m1") == false)
            #expect(try await store.releaseCountedSend(bundleID: "com.example.other", messageID: "m2") == false)
            #expect(try await store.reserveCountedSend(Self.reservation("m2", at: now + 2, caps: one)) == .reserved(at: now + 2))
            // A released message reserved again counts at its new instant.
            #expect(try await store.reserveCountedSend(Self.reservation("m1", at: now + 3, caps: one)) == .heldUntil(now + 2 + Self.hour))
        }
    }

    @Test(arguments: StoreKind.all) func aDisplayedMessageCountsEvenOverTheCap(_ kind: StoreKind) async throws {
        try await withStore(kind) { store async throws in
            let one = [CapLimit(count: 1, periodMilliseconds: Self.hour)]
            #expect(try await store.reserveCountedSend(Self.reservation("m1", at: now, caps: one)) == .reserved(at: now))
            #expect(try await store.recordCountedSend(Self.counted("d1", at: now + 5)))
            #expect(try await store.recordCountedSend(Self.counted("d1", at: now + 9)) == false)
            #expect(try await store.countedSends(bundleID: "com.example.app", userID: "user-1", campaignID: nil, since: 0) == [now, now + 5])
            // The next waits for the most recent of them.
            #expect(try await store.reserveCountedSend(Self.reservation("m2", at: now + 10, caps: one)) == .heldUntil(now + 5 + Self.hour))
        }
    }

    @Test(arguments: StoreKind.all) func theRollingPeriodLeavesOutASendExactlyOnePeriodAgo(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let one = [CapLimit(count: 1, periodMilliseconds: Self.hour)]
            // (now - 1 h, now]: a send at now - 1 h is outside, at now - 1 h + 1 ms inside.
            try await store.recordCountedSend(Self.counted("old", at: now - Self.hour))
            #expect(try await store.reserveCountedSend(Self.reservation("m1", at: now, caps: one)) == .reserved(at: now))
            try await store.recordCountedSend(Self.counted("old2", at: now - Self.hour + 1, user: "user-2"))
            #expect(try await store.reserveCountedSend(Self.reservation("m2", at: now, user: "user-2", caps: one)) == .heldUntil(now + 1))
            #expect(try await store.reserveCountedSend(Self.reservation("m2", at: now + 1, user: "user-2", caps: one)) == .reserved(at: now + 1))
            // `since` is exclusive, like the window.
            #expect(try await store.countedSends(bundleID: "com.example.app", userID: "user-1", campaignID: nil, since: now - Self.hour)
                    == [now])
        }
    }

    @Test(arguments: StoreKind.all) func capsThatAllowNothingOrNothingToCountAreAnsweredWithoutTrapping(_ kind: StoreKind) async throws {
        try await withStore(kind) { store async throws in
            #expect(try await store.reserveCountedSend(Self.reservation("z", at: now, caps: [CapLimit(count: 0, periodMilliseconds: Self.hour)]))
                    == .exhausted)
            #expect(try await store.reserveCountedSend(Self.reservation("z", at: now, caps: [], campaignCaps: [CapLimit(count: -1, periodMilliseconds: 1)]))
                    == .exhausted)
            // No caps: always reserved (counted, for caps configured later).
            #expect(try await store.reserveCountedSend(Self.reservation("n", at: now, caps: [])) == .reserved(at: now))
            // A period as long as time itself: held past every window, never an overflow.
            let forever = [CapLimit(count: 1, periodMilliseconds: .max)]
            #expect(try await store.reserveCountedSend(Self.reservation("f", at: now + 1, caps: forever, notAfter: .max)) == .exhausted)
            // Past its window, a send is never reserved, caps or not.
            #expect(try await store.reserveCountedSend(Self.reservation("late", at: now + 3, caps: [], notAfter: now + 3)) == .exhausted)
            #expect(try await store.countedSends(bundleID: "com.example.app", userID: "user-1", campaignID: nil, since: now + 2).isEmpty)
            // A zero period limits nothing.
            #expect(try await store.reserveCountedSend(Self.reservation("p", at: now + 2, caps: [CapLimit(count: 1, periodMilliseconds: 0)]))
                    == .reserved(at: now + 2))
        }
    }

    // MARK: Reads and retention

    @Test(arguments: StoreKind.all) func countedSendsAreReadByUserAndCampaignAndPrunedInBoundedBatches(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            for i in 0..<5 { try await store.recordCountedSend(Self.counted("old\(i)", at: now - 100 + Int64(i), campaign: "a")) }
            try await store.recordCountedSend(Self.counted("new", at: now, campaign: "b"))
            try await store.recordCountedSend(Self.counted("other", at: now - 100, user: "user-2"))
            #expect(try await store.countedSends(bundleID: "com.example.app", userID: "user-1", campaignID: "b", since: 0) == [now])
            #expect(try await store.countedSends(bundleID: "com.example.app", userID: "user-1", campaignID: "a", since: now - 98)
                    == [now - 97, now - 96])
            #expect(try await store.countedSends(bundleID: "com.example.other", userID: "user-1", campaignID: nil, since: 0).isEmpty)
            // Six sends before now - 50, pruned oldest first, at most two a batch.
            #expect(try await store.pruneCountedSends(before: now - 50, limit: 2) == 2)
            #expect(try await store.pruneCountedSends(before: now - 50, limit: 2) == 2)
            #expect(try await store.pruneCountedSends(before: now - 50, limit: 2) == 2)
            #expect(try await store.pruneCountedSends(before: now - 50, limit: 2) == 0)
            #expect(try await store.countedSends(bundleID: "com.example.app", userID: "user-1", campaignID: nil, since: .min) == [now])
            #expect(try await store.countedSends(bundleID: "com.example.app", userID: "user-2", campaignID: nil, since: .min).isEmpty)
        }
    }
}

/// `reserveCountedSends`: a batch answers as the same reservations one by
/// one would, in order, in one step.
@Suite("Store contract: the policy ledger's batches", .storeCaseLimit)
struct LedgerBatchContractTests {
    @Test(arguments: StoreKind.all) func aBatchAnswersInOrderAsOneByOneWould(_ kind: StoreKind) async throws {
        try await withStore(kind) { store async throws in
            let hour = LedgerContractTests.hour
            let one = [CapLimit(count: 1, periodMilliseconds: hour)]
            #expect(try await store.reserveCountedSends([]).isEmpty)
            try await store.recordCountedSend(LedgerContractTests.counted("before", at: now - 10, user: "user-3"))
            let answers = try await store.reserveCountedSends([
                LedgerContractTests.reservation("b1", at: now, caps: one),
                LedgerContractTests.reservation("b2", at: now + 1, caps: one),  // held by b1, earlier in the batch
                LedgerContractTests.reservation("b1", at: now + 2, caps: one),  // named twice: counted once
                LedgerContractTests.reservation("b3", at: now + 3, user: "user-2", caps: one),
                LedgerContractTests.reservation("b4", at: now + 4, user: "user-3", caps: one),  // held by a send before the batch
                LedgerContractTests.reservation("b5", at: now + 5, caps: [CapLimit(count: 0, periodMilliseconds: hour)]),
            ])
            #expect(answers == [.reserved(at: now), .heldUntil(now + hour), .reserved(at: now), .reserved(at: now + 3),
                                .heldUntil(now - 10 + hour), .exhausted])
            #expect(try await store.countedSends(bundleID: "com.example.app", userID: "user-1", campaignID: nil, since: 0) == [now])
            // The next batch sees this one's.
            #expect(try await store.reserveCountedSends([LedgerContractTests.reservation("b6", at: now + 6, user: "user-2", caps: one)])
                    == [.heldUntil(now + 3 + hour)])
        }
    }

    @Test(arguments: StoreKind.all) func aClosedStoreRefusesTheLedger(_ kind: StoreKind) async throws {
        // Closed inside; `withStore`'s own close after it finds it closed.
        try await withStore(kind) { try await Self.refusesOnceClosed($0) }
    }

    static func refusesOnceClosed(_ store: any ContractStore) async throws {
        await store.close()
        await #expect(throws: StoreError.closed) { try await store.reserveCountedSend(LedgerContractTests.reservation("x", at: now)) }
        await #expect(throws: StoreError.closed) { try await store.recordCountedSend(LedgerContractTests.counted("x", at: now)) }
        await #expect(throws: StoreError.closed) { try await store.releaseCountedSend(bundleID: "b", messageID: "x") }
        await #expect(throws: StoreError.closed) {
            try await store.countedSends(bundleID: "b", userID: "u", campaignID: nil, since: 0)
        }
        await #expect(throws: StoreError.closed) { try await store.pruneCountedSends(before: now, limit: 1) }
        await #expect(throws: StoreError.closed) {
            try await store.takeThrottleSlots(bundleID: "b", ratePerSecond: 1, count: 1, now: now)
        }
        await #expect(throws: StoreError.closed) {
            try await store.returnThrottleSlots(bundleID: "b", grant: ThrottleGrant(startMicros: 0, spacingMicros: 1, count: 1), unused: 1)
        }
    }
}
