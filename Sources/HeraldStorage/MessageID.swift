import CInterop

#if canImport(Glibc)
import Glibc
#endif

/// Time-ordered message IDs (UUID version 7, RFC 9562), as lowercase strings.
///
/// Random (version 4) IDs land on a random page of the `messages` id index
/// at every insert: each write then dirties — and the WAL rewrites — a
/// whole page per message. Version 7 IDs start with the creation time in
/// milliseconds, so inserts append to the index, and they are still
/// standard UUIDs for clients.
public enum MessageID {
    /// A new UUIDv7 for `now` (milliseconds since the UNIX epoch).
    public static func make(now: Int64) -> String {
        let (randA, randB) = UUIDText.randomBits()
        return make(now: now, randA: randA, randB: randB)
    }

    public static func make<R: RandomNumberGenerator>(now: Int64, using generator: inout R) -> String {
        make(now: now, randA: generator.next(), randB: generator.next())
    }

    private static func make(now: Int64, randA: UInt64, randB: UInt64) -> String {
        let millis = UInt64(max(0, now)) & 0xFFFF_FFFF_FFFF
        // 48 bits time | 4 bits version (7) | 12 bits random
        let high = (millis << 16) | 0x7000 | (randA & 0x0FFF)
        // 2 bits variant (10) | 62 bits random
        let low = (randB & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        return UUIDText.format(high: high, low: low)
    }
}

/// The text form of UUIDs and the randomness behind them, shared by every
/// UUID Herald makes (message ids, generated keys, `apns-id`).
public enum UUIDText {
    /// 128 random bits from one `getrandom` call (the kernel's CSPRNG).
    public static func randomBits() -> (UInt64, UInt64) {
        var bits: (UInt64, UInt64) = (0, 0)
        let filled = withUnsafeMutableBytes(of: &bits) { buffer -> Int in
            var filled = 0
            while filled < 16 {
                let count = getrandom(buffer.baseAddress! + filled, 16 - filled, 0)
                if count > 0 { filled += count } else if errno != EINTR { break }
            }
            return filled
        }
        if filled < 16 {
            // Not expected on Linux once the pool is seeded; never zeros.
            var generator = SystemRandomNumberGenerator()
            bits = (generator.next(), generator.next())
        }
        return bits
    }

    /// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, lowercase, in one allocation.
    public static func format(high: UInt64, low: UInt64) -> String {
        String(unsafeUninitializedCapacity: 36) { buffer in
            var index = 0
            func put(_ value: UInt64, nibbles: Int) {
                for shift in stride(from: (nibbles - 1) * 4, through: 0, by: -4) {
                    let nibble = UInt8(truncatingIfNeeded: (value >> UInt64(shift)) & 0xF)
                    buffer[index] = nibble < 10 ? 0x30 + nibble : 0x57 + nibble
                    index += 1
                }
            }
            func dash() {
                buffer[index] = UInt8(ascii: "-")
                index += 1
            }
            put(high >> 32, nibbles: 8)
            dash()
            put((high >> 16) & 0xFFFF, nibbles: 4)
            dash()
            put(high & 0xFFFF, nibbles: 4)
            dash()
            put(low >> 48, nibbles: 4)
            dash()
            put(low & 0xFFFF_FFFF_FFFF, nibbles: 12)
            return index
        }
    }
}
