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
