import HeraldPrimitives

/// One project's send quota: `perMinute` tokens at most, refilled
/// continuously at `perMinute / 60` a second, on the simulator's clock.
struct QuotaBucket {
    let perMinute: Int
    private(set) var tokens: Double
    private var last: Timestamp

    init(perMinute: Int, now: Timestamp) {
        self.perMinute = max(perMinute, 1)
        tokens = Double(self.perMinute)
        last = now
    }

    /// Takes one token: nil when there was one, else the whole seconds
    /// (at least 1) until one is back — the Retry-After to answer.
    mutating func take(now: Timestamp) -> Int? {
        refill(now: now)
        if tokens >= 1 - Self.epsilon {
            tokens = max(tokens - 1, 0)
            return nil
        }
        return Self.retryAfter(missing: 1 - tokens, perMinute: perMinute)
    }

    /// Seconds until one token is back, without taking any.
    mutating func retryAfter(now: Timestamp) -> Int {
        refill(now: now)
        return tokens >= 1 - Self.epsilon ? 1 : Self.retryAfter(missing: 1 - tokens, perMinute: perMinute)
    }

    private mutating func refill(now: Timestamp) {
        let elapsed = now.timeIntervalSince(last)
        if elapsed > 0 {
            tokens = min(Double(perMinute), tokens + elapsed * Double(perMinute) / 60)
            last = now
        }
    }

    /// Refill arithmetic in floating point: a token a hair short of whole is whole.
    private static let epsilon = 1e-9

    private static func retryAfter(missing: Double, perMinute: Int) -> Int {
        max(1, Int((missing * 60 / Double(perMinute) - epsilon).rounded(.up)))
    }
}
