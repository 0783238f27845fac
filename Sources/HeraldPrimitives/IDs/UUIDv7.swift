/// Time-ordered UUIDs (version 7, RFC 9562), lowercase: message ids.
///
/// Random (version 4) IDs land on a random page of the `messages` id index
/// at every insert: each write then dirties — and the WAL rewrites — a
/// whole page per message. Version 7 IDs start with the creation time in
/// milliseconds, so inserts append to the index, and they are still
/// standard UUIDs for clients.
public enum UUIDv7 {
    /// A new UUIDv7 for `now` (milliseconds since the UNIX epoch).
    public static func make(now: Int64) -> String {
        let (randA, randB) = UUIDText.randomBits()
        return make(now: now, randA: randA, randB: randB)
    }

    /// A new UUIDv7 for `now` from `generator` (inlinable: specialized for
    /// the caller's generator).
    @inlinable
    public static func make<R: RandomNumberGenerator>(now: Int64, using generator: inout R) -> String {
        make(now: now, randA: generator.next(), randB: generator.next())
    }

    @usableFromInline
    static func make(now: Int64, randA: UInt64, randB: UInt64) -> String {
        let millis = UInt64(max(0, now)) & 0xFFFF_FFFF_FFFF
        // 48 bits time | 4 bits version (7) | 12 bits random
        let high = (millis << 16) | 0x7000 | (randA & 0x0FFF)
        // 2 bits variant (10) | 62 bits random
        let low = (randB & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        return UUIDText.format(high: high, low: low)
    }
}
