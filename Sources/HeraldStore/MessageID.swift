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
        var generator = SystemRandomNumberGenerator()
        return make(now: now, using: &generator)
    }

    public static func make<R: RandomNumberGenerator>(now: Int64, using generator: inout R) -> String {
        let millis = UInt64(max(0, now)) & 0xFFFF_FFFF_FFFF
        let randA = generator.next() as UInt64
        let randB = generator.next() as UInt64
        // 48 bits time | 4 bits version (7) | 12 bits random
        let high = (millis << 16) | 0x7000 | (randA & 0x0FFF)
        // 2 bits variant (10) | 62 bits random
        let low = (randB & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        return format(high: high, low: low)
    }

    static func format(high: UInt64, low: UInt64) -> String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        return String(unsafeUninitializedCapacity: 36) { buffer in
            var index = 0
            func put(_ value: UInt64, nibbles: Int) {
                for shift in stride(from: (nibbles - 1) * 4, through: 0, by: -4) {
                    buffer[index] = digits[Int((value >> UInt64(shift)) & 0xF)]
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
