import HeraldCore
import Testing

@Suite("A/B verdict in plain language")
struct OpenRateVerdictTests {
    @Test("too few delivered messages, or nothing to compare: not enough data yet",
          arguments: [(0, 0, 0, 0), (29, 29, 0, 1000), (5, 1000, 5, 29), (0, 0, 10, 100)])
    func notEnoughData(o1: Int, n1: Int, o2: Int, n2: Int) {
        let comparison = OpenRateComparison(contextAware: .init(opened: o1, delivered: n1), traditional: .init(opened: o2, delivered: n2))
        let verdict = OpenRateVerdict(comparison, contextAwareDelivered: n1, traditionalDelivered: n2)
        #expect(verdict.kind == .notEnoughData)
        #expect(verdict.text.hasPrefix("not enough data yet"))
    }

    @Test("an interval clear of zero is a real difference, with the points and interval rounded to one decimal")
    func realDifference() throws {
        // 30 % of 2000 vs 25 % of 2000: difference 5.0 points, SE ≈ 1.41 → 2.2–7.8.
        let comparison = try #require(OpenRateComparison(contextAware: .init(opened: 600, delivered: 2000),
                                                         traditional: .init(opened: 500, delivered: 2000)))
        let verdict = OpenRateVerdict(comparison, contextAwareDelivered: 2000, traditionalDelivered: 2000)
        #expect(verdict.kind == .contextAwareBetter)
        #expect(verdict.text == "context-aware opened 5.0 points more, 95 % interval 2.2–7.8: a real difference")
    }

    @Test("traditional better: points less, a negative interval with minus signs")
    func traditionalBetter() throws {
        let comparison = try #require(OpenRateComparison(contextAware: .init(opened: 500, delivered: 2000),
                                                         traditional: .init(opened: 600, delivered: 2000)))
        let verdict = OpenRateVerdict(comparison, contextAwareDelivered: 2000, traditionalDelivered: 2000)
        #expect(verdict.kind == .traditionalBetter)
        #expect(verdict.text == "context-aware opened 5.0 points less, 95 % interval \u{2212}7.8–\u{2212}2.2: a real difference")
    }

    @Test("an interval holding zero is no clear difference yet")
    func noClearDifference() throws {
        let comparison = try #require(OpenRateComparison(contextAware: .init(opened: 16, delivered: 50),
                                                         traditional: .init(opened: 14, delivered: 50)))
        let verdict = OpenRateVerdict(comparison, contextAwareDelivered: 50, traditionalDelivered: 50)
        #expect(verdict.kind == .noClearDifference)
        #expect(verdict.text.hasPrefix("context-aware opened 4.0 points more, 95 % interval \u{2212}"))
        #expect(verdict.text.hasSuffix(": no clear difference yet"))
    }

    @Test("points: one decimal, half away from zero, a minus sign only below zero",
          arguments: [(0.0412, "4.1"), (-0.005, "\u{2212}0.5"), (0.0, "0.0"), (0.00049, "0.0"), (-0.00049, "0.0"), (1.0, "100.0"),
                      (Double.nan, "?")])
    func points(value: Double, text: String) {
        #expect(OpenRateVerdict.points(value) == text)
    }
}
