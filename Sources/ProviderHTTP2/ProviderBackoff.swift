import HeraldPrimitives

/// Exponential backoff: `initial`, doubling, capped at `maximum`, each delay
/// multiplied by a random factor in `jitter...1` (0: full jitter, 1: none).
public struct ProviderBackoff: Sendable, Equatable {
    /// The first delay.
    public var initial: Duration
    /// The longest delay.
    public var maximum: Duration
    /// The smallest random factor (0: full jitter, 1: none).
    public var jitter: Double

    /// A backoff from `initial` doubling to `maximum`.
    public init(initial: Duration, maximum: Duration, jitter: Double = 1) {
        self.initial = initial
        self.maximum = maximum
        self.jitter = jitter
    }

    /// The delay before attempt `failures + 1` (failures ≥ 1), with `random` in 0...1.
    public func delay(afterFailures failures: Int, random: Double = Double.random(in: 0...1)) -> Duration {
        let exponent = min(max(failures - 1, 0), 30)
        let base = min(initial.timeInterval * Double(1 << exponent), maximum.timeInterval)
        let factor = jitter >= 1 ? 1 : jitter + (1 - jitter) * min(max(random, 0), 1)
        return .nanoseconds(Int64(base * factor * 1e9))
    }
}
