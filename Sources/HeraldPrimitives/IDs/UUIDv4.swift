/// Random UUIDs (version 4, RFC 9562), lowercase: `apns-id`, generated
/// idempotency keys, the simulator's assigned ids.
public enum UUIDv4 {
    /// A new version-4 UUID from the kernel's CSPRNG.
    public static func make() -> String {
        let (a, b) = UUIDText.randomBits()
        return make(randA: a, randB: b)
    }

    /// A version-4 UUID from `generator` (reproducible tests and benchmarks).
    public static func make<R: RandomNumberGenerator>(using generator: inout R) -> String {
        make(randA: generator.next(), randB: generator.next())
    }

    /// A version-4 UUID from 128 bits the caller drew from a CSPRNG (the
    /// version and variant bits are overwritten).
    public static func make(randA: UInt64, randB: UInt64) -> String {
        let high = (randA & ~0xF000) | 0x4000                    // version 4
        let low = (randB & ~(0xC000 << 48)) | (0x8000 << 48)      // RFC 9562 variant
        return UUIDText.format(high: high, low: low)
    }
}
