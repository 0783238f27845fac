import HeraldPrimitives
@testable import ProviderHTTP2
import Testing

/// One connection's response timeouts, kept in start order behind one timer.
@Suite struct ResponseDeadlinesTests {
    let t0 = Timestamp(seconds: 1_000_000)

    @Test func nothingOpenMeansNoCheck() {
        var deadlines = HTTP2ResponseDeadlines(timeout: .seconds(30))
        #expect(deadlines.nextCheck(now: t0) == nil)
        #expect(deadlines.expired(now: t0.adding(seconds: 3600)) { _ in true }.isEmpty)
    }

    @Test func aStreamIsDueOneTimeoutAfterItStarted() {
        var deadlines = HTTP2ResponseDeadlines(timeout: .seconds(30))
        deadlines.started(1, at: t0)
        #expect(deadlines.nextCheck(now: t0) == .seconds(30))
        #expect(deadlines.nextCheck(now: t0.adding(seconds: 10)) == .seconds(20))
        #expect(deadlines.expired(now: t0.adding(seconds: 29)) { _ in true }.isEmpty)  // not early
        #expect(deadlines.expired(now: t0.adding(seconds: 30)) { _ in true } == [1])
        #expect(deadlines.count == 0)
        #expect(deadlines.nextCheck(now: t0.adding(seconds: 30)) == nil)
    }

    @Test func streamsExpireOldestFirstAndOnlyThoseDue() {
        var deadlines = HTTP2ResponseDeadlines(timeout: .seconds(10))
        deadlines.started(1, at: t0)
        deadlines.started(3, at: t0.adding(seconds: 2))
        deadlines.started(5, at: t0.adding(seconds: 2))
        deadlines.started(7, at: t0.adding(seconds: 9))
        #expect(deadlines.expired(now: t0.adding(seconds: 12)) { _ in true } == [1, 3, 5])
        #expect(deadlines.nextCheck(now: t0.adding(seconds: 12)) == .seconds(7))
        // A clock advanced far at once expires everything left.
        #expect(deadlines.expired(now: t0.adding(seconds: 3600)) { _ in true } == [7])
    }

    @Test func closedStreamsAreSkippedAndNeverReported() {
        var deadlines = HTTP2ResponseDeadlines(timeout: .seconds(10))
        for id in stride(from: Int32(1), through: 9, by: 2) { deadlines.started(id, at: t0) }
        let open: Set<Int32> = [3, 9]
        #expect(deadlines.expired(now: t0.adding(seconds: 10)) { open.contains($0) } == [3, 9])
    }

    @Test func aClosedFrontDoesNotDelayTheNextCheck() {
        var deadlines = HTTP2ResponseDeadlines(timeout: .seconds(10))
        deadlines.started(1, at: t0)
        deadlines.started(3, at: t0.adding(seconds: 4))
        // Stream 1 answered; the timer armed for it fires at t0 + 10 and finds nothing due.
        #expect(deadlines.expired(now: t0.adding(seconds: 10)) { $0 != 1 }.isEmpty)
        #expect(deadlines.nextCheck(now: t0.adding(seconds: 10)) == .seconds(4))
    }

    /// Hostile: one stream never answers while thousands start and finish
    /// behind it; the queue stays within twice the open streams plus 64.
    @Test func aStuckFrontKeepsTheQueueBounded() {
        var deadlines = HTTP2ResponseDeadlines(timeout: .seconds(30))
        var open: Set<Int32> = [1]
        deadlines.started(1, at: t0)
        var id: Int32 = 3
        var largest = 0
        for step in 0..<20_000 {
            deadlines.started(id, at: t0)
            open.insert(id)
            if step >= 10 {  // ten in flight behind the stuck one, each answered in turn
                open.remove(id - 20)
                deadlines.compact(open: open.count) { open.contains($0) }
            }
            largest = max(largest, deadlines.count)
            id += 2
        }
        #expect(largest <= 2 * open.count + 64 + 1)
        #expect(deadlines.expired(now: t0.adding(seconds: 30)) { open.contains($0) }.first == 1)
    }

    /// A wall clock stepping back never makes the next check wait longer than one timeout.
    @Test func aClockSteppingBackWaitsAtMostOneTimeout() {
        var deadlines = HTTP2ResponseDeadlines(timeout: .seconds(30))
        deadlines.started(1, at: t0)
        #expect(deadlines.nextCheck(now: t0.adding(seconds: -3600)) == .seconds(30))
        // A clock that stepped forward past the due makes it due at once.
        #expect(deadlines.nextCheck(now: t0.adding(seconds: 3600)) == .zero)
    }
}
