import HeraldPrimitives
import HeraldTestSupport
import Logging
import Synchronization
import Testing

@testable import HeraldService

@Suite("Due index", .timeLimit(.minutes(1)))
struct DueIndexTests {
    /// A lane re-queued up to the heads' compaction bound (1,024 ever
    /// earlier entries, each moving its head: the last push compacts) while
    /// another lane's earlier head sits at the top: every entry still pops
    /// when due. The compaction
    /// dropped the head being pushed (its lane is out of the table while
    /// queued) and the lane never came due again (found by
    /// bench/policy-release.sh --b-from -2).
    @Test func aLaneRequeuedPastTheCompactionBoundStillPops() {
        var index = DueIndex()
        index.insert(id: "b", dueAt: 10, slot: DueSlot(lane: "com.b"))
        for i in 0..<1_024 {
            index.insert(id: "a\(i)", dueAt: Int64(100_000 - i), slot: DueSlot(lane: "com.a"))
        }
        var popped: [String] = []
        for _ in 0..<100 where popped.count < 1_025 {
            popped += index.popDue(now: 200_000, limit: 256)
        }
        #expect(popped.count == 1_025 && Set(popped).count == 1_025)
        #expect(index.count == 0)
    }

    /// A message id as Herald makes them (a lowercase UUID), in `n`'s order.
    static func uuid(_ n: UInt64) -> String { UUIDText.format(high: 0x018b_cfe5_6800_7000 | n, low: 0x8000_0000_0000_0000 | n) }

    @Test func popsInDueOrderWithTiesByID() {
        var index = DueIndex()
        let (a, b, c, d) = (Self.uuid(1), Self.uuid(2), Self.uuid(3), Self.uuid(4))
        index.insert(id: c, dueAt: 30)
        index.insert(id: b, dueAt: 10)
        index.insert(id: a, dueAt: 10)
        index.insert(id: d, dueAt: 20)
        #expect(index.peekDueAt() == 10)
        #expect(index.popDue(now: 20, limit: 10) == [a, b, d])
        #expect(index.popDue(now: 29, limit: 10) == [])
        #expect(index.popDue(now: 30, limit: 10) == [c])
        #expect(index.count == 0)
    }

    /// Ids that are not Herald's lowercase UUIDs (uppercase, braces, any
    /// text, a UUID whose high half is all ones) are kept by number: they
    /// come back as given, tie after the UUIDs in the order first queued,
    /// and their numbers (and the lanes') are dropped once nothing of them
    /// is queued.
    @Test func otherIDsComeBackAsGivenAndTheirNumbersAreDropped() {
        var index = DueIndex()
        let upper = Self.uuid(9).uppercased()
        let ones = "ffffffff-ffff-ffff-0000-000000000001"
        let ids = ["z", upper, "", "id\u{0}nul", ones, "{\(Self.uuid(5))}"]
        for id in ids { index.insert(id: id, dueAt: 10, slot: DueSlot(lane: "com.example.a-bundle-id-past-15-bytes")) }
        index.insert(id: Self.uuid(7), dueAt: 10, slot: DueSlot(lane: "com.example.a-bundle-id-past-15-bytes"))
        #expect(index.count == ids.count + 1)
        index.remove(id: "z")
        index.insert(id: "z", dueAt: 10, slot: DueSlot(lane: "com.example.a-bundle-id-past-15-bytes"))  // numbered again: last
        #expect(index.popDue(now: 10, limit: .max) == [Self.uuid(7), upper, "", "id\u{0}nul", ones, "{\(Self.uuid(5))}", "z"])
        #expect(index.count == 0 && index.laneCount == 0 && index.numberedCount == 0)
        index.insert(id: "gone", dueAt: 1, slot: DueSlot(lane: "com.example.a-bundle-id-past-15-bytes"))
        index.remove(id: "gone")
        index.remove(id: "never-queued")
        #expect(index.count == 0 && index.laneCount == 0 && index.numberedCount == 0)
    }

    /// A lane emptied and refilled at every message (a bundle with one push
    /// due at a time), beside a lane held throughout: the numbers are
    /// reused, never counted up toward a wrap onto the held lane.
    @Test func laneNumbersAreReusedNotCountedUp() {
        var index = DueIndex()
        index.insert(id: Self.uuid(1), dueAt: 1_000_000, slot: DueSlot(lane: "com.held"))
        for i in 0..<10_000 {
            index.insert(id: Self.uuid(UInt64(2 + i)), dueAt: Int64(i), slot: DueSlot(lane: "com.churn"))
            #expect(index.popDue(now: Int64(i), limit: .max) == [Self.uuid(UInt64(2 + i))])
        }
        #expect(index.laneNumbersMade == 2)
        index.remove(id: Self.uuid(1))
        #expect(index.count == 0 && index.laneCount == 0 && index.numberedCount == 0)
    }

    @Test func removeAndRescheduleLeaveNoGhosts() {
        var index = DueIndex()
        index.insert(id: "x", dueAt: 5)
        index.insert(id: "y", dueAt: 6)
        index.remove(id: "x")
        index.insert(id: "y", dueAt: 50)  // rescheduled later
        #expect(index.peekDueAt() == 50)
        #expect(index.popDue(now: 49, limit: 10) == [])
        #expect(index.popDue(now: 50, limit: 10) == ["y"])
        #expect(index.count == 0)
    }

    @Test func limitIsHonouredAndStaleEntriesCompact() {
        var index = DueIndex()
        for round in 0..<50 {
            for i in 0..<100 { index.insert(id: "m\(i)", dueAt: Int64(round * 100 + i)) }
        }
        #expect(index.count == 100)
        let first = index.popDue(now: .max, limit: 30)
        #expect(first.count == 30)
        #expect(first == (0..<30).map { "m\($0)" })
        #expect(index.popDue(now: .max, limit: 1000).count == 70)
    }

    @Test func randomOperationsMatchASortedModel() {
        var generator = SplitMix64(seed: 42)
        var index = DueIndex()
        var model: [String: Int64] = [:]
        var now: Int64 = 0
        for _ in 0..<20_000 {
            let id = DueIndexTests.uuid(generator.next() % 500)
            switch generator.next() % 4 {
            case 0, 1:
                let due = now + Int64(generator.next() % 1000)
                index.insert(id: id, dueAt: due)
                model[id] = due
            case 2:
                index.remove(id: id)
                model[id] = nil
            default:
                now += Int64(generator.next() % 50)
                let expected = model.filter { $0.value <= now }.sorted { ($0.value, $0.key) < ($1.value, $1.key) }.map(\.key)
                #expect(index.popDue(now: now, limit: .max) == expected)
                for id in expected { model[id] = nil }
            }
        }
    }
}

@Suite("Due index: fair across bundles", .timeLimit(.minutes(1)))
struct FairDueIndexTests {
    @Test func aHugeBacklogInOneLaneDoesNotDelayAnotherLane() {
        var index = DueIndex()
        // A released campaign: 10,000 due at once in com.big …
        for i in 0..<10_000 { index.insert(id: "big\(i)", dueAt: 1_000, slot: DueSlot(lane: "com.big")) }
        // … and one push of another bundle, due a little later.
        index.insert(id: "small", dueAt: 1_001, slot: DueSlot(lane: "com.small"))
        let first = index.popDue(now: 1_001, limit: 2)
        #expect(first.contains("small"))
        #expect(index.count == 10_000 - 1)
        #expect(index.popDue(now: 1_001, limit: .max).count == 9_999)
        #expect(index.count == 0)
        #expect(index.laneCount == 0)  // emptied lanes are dropped
    }

    @Test func lanesTakeTurnsAndKeepDueOrderInside() {
        var index = DueIndex()
        for i in 0..<3 { index.insert(id: "a\(i)", dueAt: Int64(i), slot: DueSlot(lane: "a")) }
        for i in 0..<2 { index.insert(id: "b\(i)", dueAt: Int64(10 + i), slot: DueSlot(lane: "b")) }
        index.insert(id: "c0", dueAt: 5, slot: DueSlot(lane: "c"))
        let out = index.popDue(now: 100, limit: .max)
        #expect(out.count == 6)
        // One per lane per round.
        #expect(Set(out.prefix(3)) == ["a0", "b0", "c0"])
        #expect(Set(out.dropFirst(3).prefix(2)) == ["a1", "b1"])
        #expect(out.last == "a2")
    }

    @Test func transactionalGoesFirstInItsLane() {
        var index = DueIndex()
        for i in 0..<5 { index.insert(id: "bulk\(i)", dueAt: Int64(i), slot: DueSlot(lane: "a")) }
        index.insert(id: "receipt", dueAt: 50, slot: DueSlot(lane: "a", urgent: true))
        #expect(index.popDue(now: 49, limit: 1) == ["bulk0"])  // not due yet: not first
        #expect(index.popDue(now: 50, limit: 1) == ["receipt"])
        #expect(index.popDue(now: 50, limit: .max) == ["bulk1", "bulk2", "bulk3", "bulk4"])
    }

    @Test func aPausedLaneWaitsAndOthersGoOn() {
        var index = DueIndex()
        index.insert(id: "t0", dueAt: 0, slot: DueSlot(lane: "throttled"))
        index.insert(id: "t1", dueAt: 0, slot: DueSlot(lane: "throttled"))
        index.insert(id: "o0", dueAt: 0, slot: DueSlot(lane: "other"))
        index.pause(lane: "throttled", until: 500)
        #expect(index.popDue(now: 10, limit: .max) == ["o0"])
        #expect(index.peekDueAt() == 500)
        #expect(index.popDue(now: 499, limit: .max) == [])
        #expect(index.popDue(now: 500, limit: 1) == ["t0"])
        index.pause(lane: "throttled", until: 600)  // paused while ready: leaves the ring
        #expect(index.popDue(now: 599, limit: .max) == [])
        #expect(index.popDue(now: 600, limit: .max) == ["t1"])
    }

    @Test func aResumedLaneGoesAtOnceAndAnUnpausedOneKeepsItsTurn() {
        var index = DueIndex()
        for i in 0..<2 { index.insert(id: "r\(i)", dueAt: 0, slot: DueSlot(lane: "route")) }
        index.insert(id: "o0", dueAt: 0, slot: DueSlot(lane: "other"))
        index.pause(lane: "route", until: 1_000)
        #expect(index.popDue(now: 10, limit: .max) == ["o0"])
        #expect(index.peekDueAt() == 1_000)
        index.resume(lane: "route", now: 20)  // its route answered before the pause ran out
        #expect(index.peekDueAt() == 0)
        #expect(index.popDue(now: 20, limit: 1) == ["r0"])
        index.resume(lane: "route", now: 21)  // not paused: nothing changes
        index.resume(lane: "gone", now: 21)  // no such lane: nothing happens
        #expect(index.popDue(now: 21, limit: .max) == ["r1"])
        #expect(index.laneCount == 0)
    }

    @Test func movingAnIDBetweenLanesLeavesNoGhost() {
        var index = DueIndex()
        index.insert(id: "m", dueAt: 5, slot: DueSlot(lane: "a"))
        index.insert(id: "m", dueAt: 7, slot: DueSlot(lane: "b"))
        index.insert(id: "n", dueAt: 6, slot: DueSlot(lane: "a"))
        index.remove(id: "n")
        #expect(index.count == 1)
        #expect(index.peekDueAt() == 7)
        #expect(index.popDue(now: 6, limit: .max) == [])
        #expect(index.popDue(now: 7, limit: .max) == ["m"])
        #expect(index.laneCount == 0)
    }

    @Test func aThrottledLaneKeepsItsRateOverTenSecondsAndOthersAreNotSlowed() {
        var index = DueIndex()
        index.setRates(["slow": 50])  // 50/s: one slot every 20 ms
        for i in 0..<2_000 { index.insert(id: "s\(i)", dueAt: 0, slot: DueSlot(lane: "slow")) }
        index.insert(id: "receipt", dueAt: 3_000, slot: DueSlot(lane: "slow", urgent: true))
        var taken: [Int64] = []
        var receiptAt: Int64?
        var other: [Int64] = []
        // The scheduler's loop, every 5 ms for 10 s; another bundle due every 100 ms.
        for now in stride(from: Int64(0), to: 10_000, by: 5) {
            if now % 100 == 0 { index.insert(id: "o\(now)", dueAt: now, slot: DueSlot(lane: "other")) }
            for id in index.popDue(now: now, limit: 256) {
                if id == "receipt" { receiptAt = now } else if id.hasPrefix("o") { other.append(now - Int64(id.dropFirst())!) } else { taken.append(now) }
            }
        }
        // 50/s over 10 s, within 10 % (the burst allowance is 100 ms: five slots).
        #expect(abs(taken.count + 1 - 500) <= 50, "\(taken.count)")
        for start in stride(from: Int64(0), through: 9_000, by: 500) {
            let inSecond = taken.filter { $0 >= start && $0 < start + 1_000 }.count
            #expect(inSecond <= 50 + 5 + 1, "\(inSecond) in [\(start), \(start + 1_000))")
        }
        // The transactional push jumps its lane's queue (within a slot), and the other bundle never waits.
        #expect(receiptAt.map { $0 - 3_000 <= 20 } == true)
        #expect(other.count == 100 && other.allSatisfy { $0 == 0 })
        #expect(index.takeThrottleWaits().count == taken.count + 1)
        // Unthrottled: the rest goes at once.
        index.setRates([:])
        #expect(index.popDue(now: 10_000, limit: .max).count == 2_000 - taken.count)
    }

    /// Random inserts, removals, pauses and pops across lanes against a
    /// plain model: the same due set each time, each lane's part in its own
    /// order (urgent first, then due time, then id), and turns fair: while
    /// two lanes both still have due ids, neither gets two ahead.
    @Test func randomOperationsMatchAFairModel() {
        var generator = SplitMix64(seed: 7)
        var index = DueIndex()
        struct Item { var due: Int64; var lane: String; var urgent: Bool }
        var model: [String: Item] = [:]
        var paused: [String: Int64] = [:]
        var now: Int64 = 0
        let lanes = ["a", "b", "c", "d"]
        for _ in 0..<20_000 {
            let id = DueIndexTests.uuid(generator.next() % 300)
            switch generator.next() % 8 {
            case 0, 1, 2:
                let item = Item(due: now + Int64(generator.next() % 500), lane: lanes[Int(generator.next() % 4)],
                                urgent: generator.next() % 5 == 0)
                index.insert(id: id, dueAt: item.due, slot: DueSlot(lane: item.lane, urgent: item.urgent))
                model[id] = item
            case 3:
                index.remove(id: id)
                model[id] = nil
            case 4:
                let lane = lanes[Int(generator.next() % 4)]
                let until = now + Int64(generator.next() % 100)
                index.pause(lane: lane, until: until)
                if model.values.contains(where: { $0.lane == lane }) { paused[lane] = until }
            default:
                now += Int64(generator.next() % 40)
                let due = model.filter { $0.value.due <= now && (paused[$0.value.lane] ?? .min) <= now }
                let out = index.popDue(now: now, limit: .max)
                #expect(Set(out) == Set(due.keys))
                #expect(out.count == due.count)
                for lane in lanes {
                    let mine = out.filter { model[$0]?.lane == lane }
                    let expected = due.filter { $0.value.lane == lane }.sorted {
                        ($0.value.urgent ? 0 : 1, $0.value.due, $0.key) < ($1.value.urgent ? 0 : 1, $1.value.due, $1.key)
                    }.map(\.key)
                    #expect(mine == expected)
                }
                var taken: [String: Int] = [:]
                let totals = Dictionary(grouping: out, by: { model[$0]!.lane }).mapValues(\.count)
                for id in out {
                    let lane = model[id]!.lane
                    taken[lane, default: 0] += 1
                    for other in lanes where other != lane && taken[other, default: 0] < totals[other, default: 0] {
                        #expect(taken[lane]! <= taken[other, default: 0] + 1)
                    }
                }
                for id in out { model[id] = nil }
            }
            // An emptied lane is dropped with its pause.
            for lane in lanes where !model.values.contains(where: { $0.lane == lane }) { paused[lane] = nil }
        }
    }
}

/// Holds callers until opened.
actor Gate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}

@Suite("Dispatch slots", .timeLimit(.minutes(1)))
struct DispatchSlotsTests {
    @Test func aFullLoopWaitsForABatchOfFreedSlotsNotForEachOne() async {
        let slots = DispatchSlots(limit: 4, freed: nil)
        for _ in 0..<4 { #expect(slots.tryAcquire()) }
        #expect(!slots.tryAcquire())
        let loop = Task { await slots.acquire(refill: 2) }
        while slots.waiting == false { await Task.yield() }
        slots.release()
        #expect(slots.inFlight == 3)  // one free: not handed to the loop
        slots.release()
        #expect(slots.inFlight == 3)  // two free: the loop took one
        await loop.value
        slots.release()
        #expect(slots.inFlight == 2 && slots.free == 2)
    }

    @Test func relaxingHandsTheLoopASingleFreeSlot() async {
        let slots = DispatchSlots(limit: 4, freed: nil)
        for _ in 0..<4 { #expect(slots.tryAcquire()) }
        let loop = Task { await slots.acquire(refill: 4) }
        while slots.waiting == false { await Task.yield() }
        slots.relax()  // none free yet: it keeps waiting, for one slot now
        #expect(slots.inFlight == 4 && slots.waiting)
        slots.release()
        #expect(slots.inFlight == 4)  // handed over at once
        await loop.value
        #expect(!slots.waiting)
    }

    @Test func aRefillAboveTheLimitIsTheLimit() async {
        let slots = DispatchSlots(limit: 2, freed: nil)
        await slots.acquire(refill: 64)  // all free: taken at once
        #expect(slots.inFlight == 1)
    }

    @Test func aSlotFreedWhileAllWereTakenWakesThePoll() async {
        let freed = WakeSignal()
        let slots = DispatchSlots(limit: 1, freed: freed)
        #expect(slots.tryAcquire())
        slots.release()
        await freed.wait()  // signalled (kept for this wait)
        #expect(slots.free == 1)
    }
}

@Suite("Scheduler", .timeLimit(.minutes(1)))
struct SchedulerTests {
    /// Collects dispatched ids and lets the test await a count.
    final class Dispatched: Sendable {
        private let ids = Mutex<[String]>([])
        private let stream: AsyncStream<String>
        private let continuation: AsyncStream<String>.Continuation

        init() { (stream, continuation) = AsyncStream.makeStream() }

        func record(_ id: String) {
            ids.withLock { $0.append(id) }
            continuation.yield(id)
        }

        var all: [String] { ids.withLock { $0 } }

        func next(_ count: Int) async -> [String] {
            var out: [String] = []
            for await id in stream {
                out.append(id)
                if out.count == count { break }
            }
            return out
        }
    }

    @Test func dispatchesWhenTheClockReachesEachDueTime() async {
        let clock = ManualClock(now: 1_000)
        let scheduler = Scheduler(clock: clock, logger: Logger(label: "test"))
        let dispatched = Dispatched()
        let run = Task { await scheduler.run { dispatched.record($0) } }
        await scheduler.schedule(id: "now", dueAt: 1_000)
        #expect(await dispatched.next(1) == ["now"])
        await scheduler.schedule(id: "later", dueAt: 5_000)
        await scheduler.schedule(id: "soon", dueAt: 2_000)
        await scheduler.schedule(id: "dropped", dueAt: 3_000)
        await scheduler.unschedule(id: "dropped")
        clock.advance(to: 2_000)
        #expect(await dispatched.next(1) == ["soon"])
        clock.advance(to: 10_000)
        #expect(await dispatched.next(1) == ["later"])
        #expect(dispatched.all == ["now", "soon", "later"])
        #expect(await scheduler.pendingCount == 0)
        run.cancel()
        await run.value
    }

    @Test func anEarlierArrivalWakesTheScheduler() async {
        let clock = ManualClock(now: 0)
        let scheduler = Scheduler(clock: clock, logger: Logger(label: "test"))
        let dispatched = Dispatched()
        let run = Task { await scheduler.run { dispatched.record($0) } }
        await scheduler.schedule(id: "far", dueAt: 1_000_000)
        await scheduler.schedule(id: "due", dueAt: 0)  // must not wait for "far"
        #expect(await dispatched.next(1) == ["due"])
        run.cancel()
        await run.value
        #expect(await scheduler.pendingCount == 1)
    }

    @Test func concurrencyIsBounded() async {
        let clock = ManualClock(now: 0)
        let scheduler = Scheduler(clock: clock, maxInFlight: 4, logger: Logger(label: "test"))
        let inFlight = Mutex((current: 0, peak: 0))
        let dispatched = Dispatched()
        let gate = Gate()
        let run = Task {
            await scheduler.run { id in
                inFlight.withLock { $0.current += 1; $0.peak = max($0.peak, $0.current) }
                dispatched.record(id)
                if id.hasPrefix("slow") { await gate.wait() }
                inFlight.withLock { $0.current -= 1 }
            }
        }
        await scheduler.load((0..<4).map { (id: "slow\($0)", dueAt: Int64(0), slot: DueSlot()) } + (0..<20).map { (id: "fast\($0)", dueAt: Int64(1), slot: DueSlot()) })
        clock.advance(to: 1)
        _ = await dispatched.next(4)
        #expect(inFlight.withLock { $0.peak } == 4)
        #expect(dispatched.all.count == 4)  // the fast ones wait for a slot
        await gate.open()
        _ = await dispatched.next(20)
        #expect(inFlight.withLock { $0.peak } <= 4)
        run.cancel()
        await run.value
    }

    @Test func stopWaitsForDispatchesInFlightWithoutCancellingThem() async {
        let clock = ManualClock(now: 0)
        let scheduler = Scheduler(clock: clock, logger: Logger(label: "test"))
        let dispatched = Dispatched()
        let gate = Gate()
        let cancelledInside = Mutex<Bool?>(nil)
        let run = Task {
            await scheduler.run { id in
                dispatched.record(id)
                await gate.wait()
                cancelledInside.withLock { $0 = Task.isCancelled }
            }
        }
        await scheduler.schedule(id: "a", dueAt: 0)
        _ = await dispatched.next(1)
        await scheduler.stop()
        await scheduler.schedule(id: "b", dueAt: 0)  // after stop(): kept, not dispatched
        #expect(cancelledInside.withLock { $0 } == nil)  // still in flight
        await gate.open()
        await run.value  // returns once "a" finished
        #expect(cancelledInside.withLock { $0 } == false)
        #expect(dispatched.all == ["a"])
        #expect(await scheduler.pendingCount == 1)
    }

    /// A wait woken sooner keeps its clock sleep for the next wait: one
    /// sleep for a far due time however many wake-ups come meanwhile (a
    /// sleep cancelled at each wake-up kept a runtime timer per Schedule
    /// until that time), and a sleep for an earlier due time when one
    /// arrives.
    @Test func wakeUpsReuseThePendingSleep() async {
        let clock = ManualClock(now: 0)
        let scheduler = Scheduler(clock: clock, logger: Logger(label: "test"))
        let dispatched = Dispatched()
        let run = Task { await scheduler.run { dispatched.record($0) } }
        await scheduler.schedule(id: "far", dueAt: 1_000_000)
        while clock.sleeperCount == 0 { await Task.yield() }
        for i in 0..<20 {
            await scheduler.schedule(id: "due\(i)", dueAt: 0)  // wakes the loop
            #expect(await dispatched.next(1) == ["due\(i)"])
            while await scheduler.waitingUntil != 1_000_000 { await Task.yield() }  // waiting again
        }
        #expect(clock.sleepsStarted == 1)
        #expect(clock.sleeperCount == 1)
        await scheduler.schedule(id: "sooner", dueAt: 500_000)
        while clock.sleeperCount < 2 { await Task.yield() }
        #expect(clock.sleepsStarted == 2)
        clock.advance(to: 500_000)
        #expect(await dispatched.next(1) == ["sooner"])
        while await scheduler.pendingAlarms != 1 { await Task.yield() }  // the rung one dropped
        clock.advance(to: 1_000_000)
        #expect(await dispatched.next(1) == ["far"])
        #expect(clock.sleepsStarted == 2)
        run.cancel()
        await run.value
        #expect(clock.sleeperCount == 0)
        #expect(await scheduler.pendingAlarms == 0)
    }

    @Test func aManualClockSleepIsCancelledWithItsWait() async {
        let clock = ManualClock(now: 0)
        let scheduler = Scheduler(clock: clock, logger: Logger(label: "test"))
        let run = Task { await scheduler.run { _ in } }
        await scheduler.schedule(id: "far", dueAt: 1_000_000)
        // The loop waits on the clock and a wake-up at once; stop() must end both.
        while clock.sleeperCount == 0 { await Task.yield() }
        await scheduler.stop()
        await run.value
        #expect(clock.sleeperCount == 0)
        #expect(await scheduler.pendingCount == 1)
    }
}
