import HeraldCore
import Testing
@testable import HeraldStorage

/// The throttle's slots (`PolicyLedger.takeThrottleSlots`, SPEC §4b
/// "Throttle"): booked from the bundle's next free slot, one every 1/R s,
/// at most one horizon (1 s) ahead per call, the tail given back when
/// nothing was booked after it. Every case runs on SQLite, PostgreSQL and
/// the in-memory store; two PostgreSQL replicas at once are
/// PostgresLedgerTests'.
@Suite("Store contract: the throttle's slots", .storeCaseLimit)
struct ThrottleContractTests {
    static let bundle = "com.example.app"

    // MARK: Hostile first

    @Test(arguments: StoreKind.all) func aHugeCountBooksOneSecondOfSlotsAndTheNextCallWaits(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let grant = try await store.takeThrottleSlots(bundleID: Self.bundle, ratePerSecond: 200, count: .max, now: now)
            #expect(grant == ThrottleGrant(startMicros: now * 1_000, spacingMicros: 5_000, count: 200))
            #expect(grant.milliseconds(of: 199) == now + 995)
            // Nothing free within the horizon: none booked, and when to retry.
            let none = try await store.takeThrottleSlots(bundleID: Self.bundle, ratePerSecond: 200, count: 10, now: now)
            #expect(none.count == 0 && none.startMicros == (now + 1_000) * 1_000 && none.retryAt == now + 1)
            let next = try await store.takeThrottleSlots(bundleID: Self.bundle, ratePerSecond: 200, count: 10, now: none.retryAt)
            #expect(next == ThrottleGrant(startMicros: (now + 1_000) * 1_000, spacingMicros: 5_000, count: 1))
            // Another bundle has its own schedule.
            let other = try await store.takeThrottleSlots(bundleID: "com.example.other", ratePerSecond: 200, count: 3, now: now)
            #expect(other == ThrottleGrant(startMicros: now * 1_000, spacingMicros: 5_000, count: 3))
        }
    }

    @Test(arguments: StoreKind.all) func oneASecondBooksOneSlotAtATime(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let first = try await store.takeThrottleSlots(bundleID: Self.bundle, ratePerSecond: 1, count: 10, now: now)
            #expect(first == ThrottleGrant(startMicros: now * 1_000, spacingMicros: 1_000_000, count: 1))
            let second = try await store.takeThrottleSlots(bundleID: Self.bundle, ratePerSecond: 1, count: 10, now: now + 500)
            #expect(second == ThrottleGrant(startMicros: (now + 1_000) * 1_000, spacingMicros: 1_000_000, count: 1))
            let third = try await store.takeThrottleSlots(bundleID: Self.bundle, ratePerSecond: 1, count: 10, now: now + 500)
            #expect(third.count == 0 && third.retryAt == now + 1_001)
            // A rate below one is one; a count of zero books nothing.
            let slow = try await store.takeThrottleSlots(bundleID: "com.example.slow", ratePerSecond: 0, count: 2, now: now)
            #expect(slow.spacingMicros == 1_000_000 && slow.count == 1)
            #expect(try await store.takeThrottleSlots(bundleID: "com.example.zero", ratePerSecond: 5, count: 0, now: now).count == 0)
        }
    }

    @Test(arguments: StoreKind.all) func aFarFutureNowCannotStopTheBundle(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let future = now + 10 * 365 * 86_400_000
            let far = try await store.takeThrottleSlots(bundleID: Self.bundle, ratePerSecond: 100, count: 50, now: future)
            #expect(far == ThrottleGrant(startMicros: future * 1_000, spacingMicros: 10_000, count: 50))
            // A schedule further ahead than any honest call books is ignored.
            let back = try await store.takeThrottleSlots(bundleID: Self.bundle, ratePerSecond: 100, count: 50, now: now)
            #expect(back == ThrottleGrant(startMicros: now * 1_000, spacingMicros: 10_000, count: 50))
            // Hostile instants are held, not trapped on.
            let extreme = try await store.takeThrottleSlots(bundleID: "com.example.extreme", ratePerSecond: 1_000_000_000, count: 2, now: .max)
            #expect(extreme.count == 2 && extreme.spacingMicros == 1)
            // Within the lead (10 s), an idle bundle simply starts at now.
            let idle = try await store.takeThrottleSlots(bundleID: Self.bundle, ratePerSecond: 100, count: 1, now: now + 60_000)
            #expect(idle.startMicros == (now + 60_000) * 1_000)
        }
    }

    @Test(arguments: StoreKind.all) func unusedSlotsAreGivenBackOnlyWhenNothingWasBookedAfterThem(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let grant = try await store.takeThrottleSlots(bundleID: Self.bundle, ratePerSecond: 100, count: 20, now: now)
            #expect(try await store.returnThrottleSlots(bundleID: Self.bundle, grant: grant, unused: 5))
            // Given back once: the same grant's end is no longer the schedule's.
            #expect(try await store.returnThrottleSlots(bundleID: Self.bundle, grant: grant, unused: 5) == false)
            let next = try await store.takeThrottleSlots(bundleID: Self.bundle, ratePerSecond: 100, count: 5, now: now)
            #expect(next.startMicros == grant.microseconds(of: 15) && next.count == 5)
            // Booked after: `next` keeps its slots, `grant`'s are lost.
            let later = try await store.takeThrottleSlots(bundleID: Self.bundle, ratePerSecond: 100, count: 1, now: now)
            #expect(try await store.returnThrottleSlots(bundleID: Self.bundle, grant: next, unused: 5) == false)
            #expect(later.startMicros == next.endMicros)
            #expect(try await store.returnThrottleSlots(bundleID: Self.bundle, grant: later, unused: 0) == false)
        }
    }

    // MARK: The rate

    /// Callers asking for more than the rate every 50 ms of a virtual 12 s:
    /// the slots are never closer than 1/R, and any 10 s holds R × 10 of
    /// them within 10 % (here: exactly, being booked back to back).
    @Test(arguments: StoreKind.all) func slotsKeepTheRateOverAnyTenSeconds(_ kind: StoreKind) async throws {
        try await withStore(kind) { store in
            var slots: [Int64] = []
            for step in 0..<240 {
                let grant = try await store.takeThrottleSlots(bundleID: Self.bundle, ratePerSecond: 200, count: 15, now: now + Int64(step) * 50)
                slots += (0..<grant.count).map(grant.microseconds(of:))
            }
            ThrottleRate.expect(slots, ratePerSecond: 200, from: now * 1_000, seconds: 12)
        }
    }
}

/// The rate's checks on booked slots (µs), shared with the replicas' test.
enum ThrottleRate {
    static func expect(_ slots: [Int64], ratePerSecond: Int64, from start: Int64, seconds: Int64,
                       sourceLocation: SourceLocation = #_sourceLocation) {
        let sorted = slots.sorted()
        let spacing = 1_000_000 / ratePerSecond
        #expect(Set(sorted).count == sorted.count, "a slot was booked twice", sourceLocation: sourceLocation)
        let closest = zip(sorted, sorted.dropFirst()).map { $1 - $0 }.min() ?? spacing
        #expect(closest >= spacing, "two slots \(closest) µs apart", sourceLocation: sourceLocation)
        // Every 10 s window starting on a slot or a 100 ms step holds R × 10 within 10 %.
        let window: Int64 = 10_000_000, expected = ratePerSecond * 10
        var starts = Array(stride(from: start, through: start + (seconds - 10) * 1_000_000, by: 100_000))
        starts += sorted.filter { $0 <= start + (seconds - 10) * 1_000_000 }
        for windowStart in starts {
            let lower = sorted.partitionIndex { $0 >= windowStart }
            let upper = sorted.partitionIndex { $0 >= windowStart + window }
            let inside = Int64(upper - lower)
            #expect(inside <= expected && inside * 10 >= expected * 9,
                    "\(inside) slots in the 10 s from \(windowStart) µs (rate \(ratePerSecond)/s)", sourceLocation: sourceLocation)
            if inside > expected || inside * 10 < expected * 9 { return }
        }
    }
}

extension Array {
    /// The first index whose element satisfies `belongs` (sorted so that
    /// those that do come last).
    func partitionIndex(where belongs: (Element) -> Bool) -> Int {
        var low = 0, high = count
        while low < high {
            let mid = (low + high) / 2
            if belongs(self[mid]) { high = mid } else { low = mid + 1 }
        }
        return low
    }
}
