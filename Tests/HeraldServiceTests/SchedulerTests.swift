import HeraldTestSupport
import Logging
import Synchronization
import Testing

@testable import HeraldService

@Suite("Due index", .timeLimit(.minutes(1)))
struct DueIndexTests {
    @Test func popsInDueOrderWithTiesByID() {
        var index = DueIndex()
        index.insert(id: "c", dueAt: 30)
        index.insert(id: "b", dueAt: 10)
        index.insert(id: "a", dueAt: 10)
        index.insert(id: "d", dueAt: 20)
        #expect(index.peekDueAt() == 10)
        #expect(index.popDue(now: 20, limit: 10) == ["a", "b", "d"])
        #expect(index.popDue(now: 29, limit: 10) == [])
        #expect(index.popDue(now: 30, limit: 10) == ["c"])
        #expect(index.count == 0)
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
            let id = "id\(generator.next() % 500)"
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
        await scheduler.load((0..<4).map { (id: "slow\($0)", dueAt: 0) } + (0..<20).map { (id: "fast\($0)", dueAt: 1) })
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
