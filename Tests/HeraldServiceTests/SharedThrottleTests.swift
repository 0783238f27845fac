import HeraldCore
import HeraldStorage
import HeraldTestSupport
import Logging
import Synchronization
import Testing

@testable import HeraldService

/// `max-per-second` on a store shared by replicas (SPEC §4b): the polling
/// scheduler claims no more of a throttled bundle than the slots it can
/// still book within the horizon, books them on the shared ledger, and
/// dispatches each claim at its slot.
@Suite("Shared throttle (polling)", .timeLimit(.minutes(1)))
struct SharedThrottleTests {
    // MARK: Hostile first

    /// Rates at the bounds: below 1 is 1/s, above a million a million; a
    /// quota never exceeds the poll's limit, and a limit of 0 gives 0.
    @Test func quotasStayWithinTheHorizonAndTheLimit() {
        var throttle = SharedThrottle()
        let now: Int64 = 5_000_000
        let quota = throttle.quota(rates: ["slow": 0, "fast": 5_000_000, "mid": 10], nowMicros: now, limit: 256)
        #expect(quota == ["slow": 1, "fast": 256, "mid": 10])
        #expect(throttle.quota(rates: ["mid": 10], nowMicros: now, limit: 0) == ["mid": 0])
    }

    /// After a grant the next free slot is remembered: the quota is what is
    /// left of the horizon; a full horizon gives 0 until a slot comes within it.
    @Test func aGrantShrinksTheNextQuotaUntilItsSlotsComeWithinTheHorizon() {
        var throttle = SharedThrottle()
        let spacing = ThrottleSchedule.spacing(ratePerSecond: 10)  // 100 ms
        throttle.booked("b", ThrottleGrant(startMicros: 0, spacingMicros: spacing, count: 10))  // next free at 1 s
        #expect(throttle.quota(rates: ["b": 10], nowMicros: 0, limit: 256) == ["b": 0])
        #expect(throttle.quota(rates: ["b": 10], nowMicros: 250_000, limit: 256) == ["b": 3])
        // Another replica booked further: a grant of none moves the next free slot.
        throttle.booked("b", ThrottleGrant(startMicros: 1_800_000, spacingMicros: spacing, count: 0))
        #expect(throttle.quota(rates: ["b": 10], nowMicros: 500_000, limit: 256) == ["b": 0])
        #expect(throttle.quota(rates: ["b": 10], nowMicros: 1_000_000, limit: 256) == ["b": 2])
        // A bundle no longer throttled is forgotten.
        #expect(throttle.quota(rates: [:], nowMicros: 0, limit: 256).isEmpty)
        #expect(throttle.quota(rates: ["b": 10], nowMicros: 0, limit: 256) == ["b": 10])
    }

    /// Booked here (no shared ledger): consecutive grants never overlap.
    @Test func localGrantsFollowEachOther() {
        var throttle = SharedThrottle()
        let first = throttle.bookLocally("b", rate: 10, count: 4, nowMicros: 0)
        let second = throttle.bookLocally("b", rate: 10, count: 100, nowMicros: 0)
        #expect(first.count == 4 && first.startMicros == 0)
        #expect(second.startMicros == first.endMicros && second.count == 6)
    }

    /// Through the scheduler: three due messages of a bundle at 10/s go at
    /// 0, 100 and 200 ms (each recorded with the clock at its dispatch), an
    /// unthrottled bundle's at once, and the waits are observed.
    @Test func thePollingSchedulerDispatchesEachThrottledClaimAtItsSlot() async throws {
        let (store, clock) = (InMemoryStore(), ManualClock(now: 0))
        let scheduler = Scheduler(clock: clock, logger: Logger(label: "test"), shared: store, pollMilliseconds: 60_000)
        let waits = WaitLog()
        await scheduler.setThrottle(SchedulerThrottle(rates: { ["com.slow": 10] }, waited: { waits.add($0) }, ledger: store))
        for id in ["s1", "s2", "s3"] { _ = try await store.schedule(Self.message(id, bundle: "com.slow")) }
        _ = try await store.schedule(Self.message("f1", bundle: "com.fast"))
        let dispatched = SchedulerTests.Dispatched()
        let at = WaitLog()
        let run = Task {
            await scheduler.run(claimed: { message, _ in
                at.add([clock.now()])
                dispatched.record(message.id)
            })
        }
        #expect(Set(await dispatched.next(2)) == ["s1", "f1"])
        clock.advance(to: 100)
        #expect(await dispatched.next(1) == ["s2"])
        clock.advance(to: 200)
        #expect(await dispatched.next(1) == ["s3"])
        #expect(at.all.sorted() == [0, 0, 100, 200])
        #expect(waits.all.sorted() == [0, 100, 200])
        await scheduler.stop()
        await run.value
    }

    static func message(_ id: String, bundle: String) -> StoredMessage {
        StoredMessage(
            id: id, bundleID: bundle, platform: .ios, userID: "u1", campaignID: "c",
            idempotencyKey: "key-\(id)", deliveryMethod: .traditional, abTest: false,
            windowStart: 0, windowEnd: 3_600_000, dueAt: 0, request: Array("r".utf8), createdAt: 0)
    }

    final class WaitLog: Sendable {
        private let values = Mutex<[Int64]>([])
        func add(_ more: [Int64]) { values.withLock { $0 += more } }
        var all: [Int64] { values.withLock { $0 } }
    }
}
