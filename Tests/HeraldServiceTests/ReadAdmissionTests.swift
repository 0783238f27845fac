import GRPCEngine
import Synchronization
import Testing

@testable import HeraldService

/// The read side's concurrency bound (issue 24 item 4): hostile first.
@Suite("Read admission: bounded read-side calls, bounded waits", .timeLimit(.minutes(1)))
struct ReadAdmissionTests {
    /// A body that holds its place until `open()`: reads that never finish.
    final class Latch: Sendable {
        private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
        func wait() async {
            await withCheckedContinuation { continuation in
                let open = state.withLock { state in
                    if !state.open { state.waiters.append(continuation) }
                    return state.open
                }
                if open { continuation.resume() }
            }
        }
        func open() {
            let waiters = state.withLock { state in
                state.open = true
                defer { state.waiters = [] }
                return state.waiters
            }
            waiters.forEach { $0.resume() }
        }
    }

    /// Calls inside at once, and the most at any time.
    final class Tally: Sendable {
        private let state = Mutex<(now: Int, peak: Int)>((0, 0))
        func enter() { state.withLock { $0.now += 1; $0.peak = max($0.peak, $0.now) } }
        func leave() { state.withLock { $0.now -= 1 } }
        var peak: Int { state.withLock { $0.peak } }
    }

    /// Polls `condition` (bounded): no sleeps standing in for an event.
    private func eventually(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw CancellationError() }
            await Task.yield()
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    @Test func three_hundred_calls_get_the_bound_and_the_rest_are_refused_naming_the_setting() async throws {
        let admission = ReadAdmission(maxConcurrent: 8, maxQueued: 16)
        let latch = Latch()
        let tally = Tally()
        let results = try await withThrowingTaskGroup(of: GRPCStatus.Code?.self) { group in
            for _ in 0..<300 {
                group.addTask {
                    do {
                        try await admission.run {
                            tally.enter()
                            await latch.wait()
                            tally.leave()
                        }
                        return nil
                    } catch let status as GRPCStatus {
                        #expect(status.message.contains("--max-concurrent-reads"))
                        return status.code
                    }
                }
            }
            // Every call either runs, waits or was refused before any ends.
            try await eventually { admission.counts == (8, 16) }
            latch.open()
            var codes: [GRPCStatus.Code?] = []
            for try await code in group { codes.append(code) }
            return codes
        }
        #expect(results.filter { $0 == nil }.count == 8 + 16)
        #expect(results.filter { $0 == .resourceExhausted }.count == 300 - 24)
        #expect(tally.peak == 8)
        #expect(admission.counts == (0, 0))
    }

    @Test func a_waiting_call_whose_caller_gives_up_leaves_the_queue() async throws {
        let admission = ReadAdmission(maxConcurrent: 1, maxQueued: 1)
        let latch = Latch()
        let holder = Task { try await admission.run { await latch.wait() } }
        try await eventually { admission.counts == (1, 0) }
        let waiter = Task { try await admission.run { } }
        try await eventually { admission.counts == (1, 1) }
        // The queue is full: a third is refused at once.
        await #expect(throws: GRPCStatus.self) { try await admission.run { } }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(admission.counts == (1, 0))
        // Its place is free again; the holder's end admits the next one.
        let next = Task { try await admission.run { 42 } }
        try await eventually { admission.counts == (1, 1) }
        latch.open()
        try await holder.value
        #expect(try await next.value == 42)
        #expect(admission.counts == (0, 0))
    }
}
