/// A plain-language reading of an A/B open-rate comparison, for people who
/// do not read confidence intervals: "context-aware opened 4.1 points more,
/// 95 % interval 2.3–5.9: a real difference", or "not enough data yet".
///
/// Rules: fewer than ``minimumDelivered`` delivered messages in either
/// cohort (or no comparison at all) is not enough data; otherwise the
/// difference is real when its 95 % interval leaves out zero, and "no clear
/// difference yet" when it holds zero. Points are percentage points,
/// rounded to one decimal.
public struct OpenRateVerdict: Sendable, Hashable {
    /// How the comparison reads.
    public enum Kind: String, Sendable, Hashable {
        case notEnoughData = "not_enough_data"
        case contextAwareBetter = "context_aware_better"
        case traditionalBetter = "traditional_better"
        case noClearDifference = "no_clear_difference"
    }

    /// Delivered messages each cohort needs before a verdict is given (below
    /// it the normal approximation behind the interval is poor).
    public static let minimumDelivered = 30

    public var kind: Kind
    /// The sentence to show.
    public var text: String

    public init(_ comparison: OpenRateComparison?, contextAwareDelivered: Int, traditionalDelivered: Int) {
        guard let comparison, min(contextAwareDelivered, traditionalDelivered) >= Self.minimumDelivered else {
            kind = .notEnoughData
            text = "not enough data yet (each cohort needs \(Self.minimumDelivered) delivered messages; "
                + "\(contextAwareDelivered) context-aware, \(traditionalDelivered) traditional so far)"
            return
        }
        let points = Self.points(abs(comparison.difference))
        let direction = comparison.difference >= 0 ? "more" : "less"
        let interval = "95 % interval \(Self.points(comparison.low))–\(Self.points(comparison.high))"
        let head = "context-aware opened \(points) points \(direction), \(interval)"
        if comparison.low > 0 {
            kind = .contextAwareBetter
            text = head + ": a real difference"
        } else if comparison.high < 0 {
            kind = .traditionalBetter
            text = head + ": a real difference"
        } else {
            kind = .noClearDifference
            text = head + ": no clear difference yet"
        }
    }

    /// A rate difference as percentage points with one decimal, a minus
    /// sign (U+2212) when negative: 0.0412 → "4.1", -0.005 → "−0.5".
    public static func points(_ difference: Double) -> String {
        guard difference.isFinite else { return "?" }
        let tenths = Int((difference * 1000).rounded())
        let sign = tenths < 0 ? "\u{2212}" : ""
        let magnitude = abs(tenths)
        return "\(sign)\(magnitude / 10).\(magnitude % 10)"
    }
}
