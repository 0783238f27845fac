import HeraldCore
import Testing

@Suite("A/B open-rate difference: two-proportion 95 % interval, unpooled")
struct OpenRateComparisonTests {
    @Test("no delivered message in a cohort: nothing to compare", arguments: [(0, 0, 3, 10), (3, 10, 0, 0), (0, 0, 0, 0)])
    func zeroDenominators(o1: Int, n1: Int, o2: Int, n2: Int) {
        #expect(OpenRateComparison(contextAware: .init(opened: o1, delivered: n1), traditional: .init(opened: o2, delivered: n2)) == nil)
    }

    @Test func edgeRatesHaveAZeroWidthInterval() throws {
        let all = try #require(OpenRateComparison(contextAware: .init(opened: 5, delivered: 5), traditional: .init(opened: 0, delivered: 7)))
        #expect(all.difference == 1 && all.standardError == 0 && all.low == 1 && all.high == 1)
    }

    @Test func matchesTheTextbookFormula() throws {
        // p1 = 0.30 (n 1000), p2 = 0.25 (n 800): SE = sqrt(.3*.7/1000 + .25*.75/800) = 0.0210802…
        let c = try #require(OpenRateComparison(contextAware: .init(opened: 300, delivered: 1000),
                                                traditional: .init(opened: 200, delivered: 800)))
        #expect(abs(c.difference - 0.05) < 1e-12)
        #expect(abs(c.standardError - 0.021080203983832795) < 1e-12)
        #expect(abs(c.low - (0.05 - 1.959963984540054 * 0.021080203983832795)) < 1e-12)
        #expect(abs(c.high - 0.09131644059507005) < 1e-9)
        #expect(c.contextAwareRate == 0.3 && c.traditionalRate == 0.25)
    }
}
