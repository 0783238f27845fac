import HeraldCore
import HeraldStorage
import HeraldTestSupport
import Logging
import Synchronization
import Testing

@testable import HeraldService

/// The scheduler over a store shared by replicas (`SharedDueStore`): it
/// keeps no due index, finds what any replica scheduled by polling, is woken
/// sooner by its own Schedules, and renews the leases of what it sends.
@Suite("Scheduler polling a shared store", .timeLimit(.minutes(1)))
struct SchedulerPollingTests {
    static func message(_ id: String, dueAt: Int64) -> StoredMessage {
        StoredMessage(
            id: id, bundleID: "com.example.poll", platform: .ios, userID: "u1", campaignID: "c",
            idempotencyKey: "key-\(id)", deliveryMethod: .traditional, abTest: false,
            windowStart: dueAt, windowEnd: dueAt + 3_600_000, dueAt: dueAt, request: Array("r".utf8), createdAt: 0)
    }

    @Test func findsWhatAnotherReplicaScheduledWhenItIsDue() async throws {
        let (store, clock) = (InMemoryStore(), ManualClock(now: 0))
        let scheduler = Scheduler(clock: clock, logger: Logger(label: "test"), shared: store)
        let dispatched = SchedulerTests.Dispatched()
        let run = Task { await scheduler.run(claimed: { message, _ in dispatched.record(message.id) }) }
        // Stored by "another replica": this scheduler was never told.
        _ = try await store.schedule(Self.message("m-other", dueAt: 1_000))
        while clock.sleeperCount < 2 { await Task.yield() }  // the poll's wait and the lease keeper's
        #expect(dispatched.all.isEmpty)
        clock.advance(to: 1_000)
        #expect(await dispatched.next(1) == ["m-other"])
        #expect(try await store.message(id: "m-other")?.isSending == true)  // claimed by the poll
        #expect(await scheduler.pendingCount == 0)  // no due index
        await scheduler.stop()
        await run.value
    }

    @Test func aScheduleHereDueBeforeTheNextPollWakesItSooner() async throws {
        let (store, clock) = (InMemoryStore(), ManualClock(now: 0))
        let scheduler = Scheduler(clock: clock, logger: Logger(label: "test"), shared: store, pollMilliseconds: 60_000)
        let dispatched = SchedulerTests.Dispatched()
        let run = Task { await scheduler.run(claimed: { message, _ in dispatched.record(message.id) }) }
        while clock.sleeperCount < 2 { await Task.yield() }
        _ = try await store.schedule(Self.message("m-now", dueAt: 0))
        await scheduler.schedule(id: "m-now", dueAt: 0)  // the clock does not move
        #expect(await dispatched.next(1) == ["m-now"])
        await scheduler.stop()
        await run.value
    }

    /// Every due time scheduled here wakes the poll, not only the earliest
    /// one since the last poll: each message goes when it falls due, not at
    /// the next poll tick (a minute away here).
    @Test func eachDueTimeScheduledHereWakesThePollInTurn() async throws {
        let (store, clock) = (InMemoryStore(), ManualClock(now: 0))
        let scheduler = Scheduler(clock: clock, logger: Logger(label: "test"), shared: store, pollMilliseconds: 60_000)
        let dispatched = SchedulerTests.Dispatched()
        let run = Task { await scheduler.run(claimed: { message, _ in dispatched.record(message.id) }) }
        while clock.sleeperCount < 2 { await Task.yield() }
        for (id, dueAt) in [("m-3", Int64(3_000)), ("m-1", 1_000), ("m-2", 2_002)] {
            _ = try await store.schedule(Self.message(id, dueAt: dueAt))
            await scheduler.schedule(id: id, dueAt: dueAt)
        }
        for (id, time) in [("m-1", Int64(1_000)), ("m-2", 2_005), ("m-3", 3_000)] {
            clock.advance(to: time)
            #expect(await dispatched.next(1) == [id])
        }
        await scheduler.stop()
        await run.value
    }

    @Test func dueHintsAreBoundedRoundedUpAndCoveredByAPoll() {
        var hints = DueHints(capacity: 3, granularity: 5)
        for time in [Int64(12), 11, 15, 40, 30, 31, 1] { hints.note(time) }
        // 12 and 11 share 15; past three times the latest go.
        #expect(hints.times == [1 + 4, 15, 30])
        hints.note(.max - 1)  // rounds up past Int64.max: saturates, then dropped as the latest
        #expect(hints.times == [5, 15, 30])
        hints.covered(by: 15)
        #expect(hints.next == 30)
        hints.covered(by: .max)
        #expect(hints.next == nil)
        hints.note(-7)  // before the epoch: rounds up toward zero
        #expect(hints.times == [-5])
    }

    @Test func theLeasesOfMessagesBeingSentAreRenewedUntilTheyFinish() async throws {
        let (store, clock) = (InMemoryStore(), ManualClock(now: 0))
        let scheduler = Scheduler(clock: clock, logger: Logger(label: "test"), shared: store)
        let dispatched = SchedulerTests.Dispatched()
        let gate = Gate()
        let run = Task {
            await scheduler.run(claimed: { message, _ in
                dispatched.record(message.id)
                await gate.wait()
            })
        }
        _ = try await store.schedule(Self.message("m-slow", dueAt: 0))
        #expect(await dispatched.next(1) == ["m-slow"])
        // A third of the 3 s lease later the keeper renews the claim being sent.
        clock.advance(to: 1_000)
        while await store.leaseRenewals.isEmpty { await Task.yield() }
        #expect(await store.leaseRenewals == [["m-slow"]])
        await gate.open()
        await scheduler.stop()
        await run.value  // returns once the send finished; the keeper ends with it
        #expect(await store.leaseRenewals == [["m-slow"]])
    }
}
