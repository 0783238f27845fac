/// The difference in open rate between the context-aware and the traditional
/// cohort of an A/B split, with a 95 % confidence interval: the
/// two-proportion (Wald) interval with the unpooled standard error
/// `sqrt(p1(1-p1)/n1 + p2(1-p2)/n2)`.
///
/// Zero denominators: with no delivered message in either cohort there is
/// nothing to compare and ``init(contextAware:traditional:)`` returns nil.
/// When both rates are 0 or 1 the standard error is 0 and the interval is
/// the point itself (the Wald interval's known weakness at the edges; the
/// counts are reported beside it so a reader can judge).
public struct OpenRateComparison: Sendable, Hashable {
    /// Opened and delivered messages of one cohort.
    public struct Cohort: Sendable, Hashable {
        public var opened: Int
        public var delivered: Int

        public init(opened: Int, delivered: Int) {
            self.opened = opened
            self.delivered = delivered
        }

        /// opened / delivered; 0 when nothing was delivered.
        public var rate: Double { delivered == 0 ? 0 : Double(opened) / Double(delivered) }
    }

    /// The two-sided 95 % normal quantile.
    public static let z95 = 1.959963984540054

    public var contextAwareRate: Double
    public var traditionalRate: Double
    /// contextAwareRate - traditionalRate.
    public var difference: Double
    public var standardError: Double
    public var low: Double
    public var high: Double

    public init?(contextAware: Cohort, traditional: Cohort) {
        guard contextAware.delivered > 0, traditional.delivered > 0 else { return nil }
        let p1 = contextAware.rate
        let p2 = traditional.rate
        let variance = p1 * (1 - p1) / Double(contextAware.delivered) + p2 * (1 - p2) / Double(traditional.delivered)
        contextAwareRate = p1
        traditionalRate = p2
        difference = p1 - p2
        standardError = max(0, variance).squareRoot()
        low = difference - Self.z95 * standardError
        high = difference + Self.z95 * standardError
    }
}
