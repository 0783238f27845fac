import NIOCore
import NIOEmbedded
import Testing

@testable import GRPCEngine

/// Per-loop shares of the request-buffer budget (issue 30): the total never
/// passes the limit whatever the loops ask, a refused reservation takes
/// nothing, `used` is exact at rest (idle shares are not "used"), a loop
/// keeps at most two chunks idle, small requests touch only the loop's own
/// share, and a small limit gets no chunk at all (every byte exact).
@Suite("LoopBudget")
struct LoopBudgetTests {
    @Test func theTotalNeverPassesTheLimit() {
        let budget = SharedBudget(limit: 1 << 20, loops: 2)
        let (a, b) = (budget.share(for: EmbeddedEventLoop()), budget.share(for: EmbeddedEventLoop()))
        #expect(budget.chunk == 8 << 10)
        var taken = 0
        // Both loops ask in turns until refused: never more than the limit.
        for round in 0..<10_000 {
            let share = round % 2 == 0 ? a : b
            if share.reserve(700) { taken += 700 } else { break }
        }
        #expect(taken <= 1 << 20)
        #expect(taken > (1 << 20) - (1 << 20) / 16, "refused early by more than the idle shares allow: \(taken)")
        #expect(budget.used == taken)
        // A refused reservation took nothing.
        let before = budget.used
        #expect(!a.reserve(1 << 20))
        #expect(budget.used == before)
    }

    @Test func atRestNothingIsUsedAndLittleIsHeld() {
        let budget = SharedBudget(limit: 128 << 20, loops: 4)
        let share = budget.share(for: EmbeddedEventLoop())
        #expect(budget.chunk == 64 << 10)
        for _ in 0..<1000 {
            #expect(share.reserve(5))
            share.release(5)
        }
        #expect(budget.used == 0)
        #expect(share.idle <= 2 * budget.chunk)
        // A big body and its release: the rest goes back to the total.
        #expect(share.reserve(10 << 20))
        #expect(budget.used == 10 << 20)
        share.release(10 << 20)
        #expect(budget.used == 0)
        #expect(share.idle <= 2 * budget.chunk)
    }

    @Test func aSmallLimitKeepsEveryByteExact() {
        let budget = SharedBudget(limit: 50_000, loops: 2)
        #expect(budget.chunk == 0)
        let share = budget.share(for: EmbeddedEventLoop())
        #expect(share.reserve(50_000))
        #expect(!share.reserve(1))
        share.release(50_000)
        #expect(share.idle == 0)
        #expect(budget.used == 0)
        #expect(share.reserve(0) && share.reserve(-3))
    }

    @Test func aLoopGetsOneSharePerBudget() {
        let budget = SharedBudget(limit: 1 << 20, loops: 1)
        let loop = EmbeddedEventLoop()
        #expect(budget.share(for: loop) === budget.share(for: loop))
        #expect(budget.share(for: loop) !== budget.share(for: EmbeddedEventLoop()))
    }
}
