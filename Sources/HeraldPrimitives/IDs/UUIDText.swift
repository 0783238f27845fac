/// The text form of UUIDs and the randomness behind them, shared by every
/// UUID Herald makes (message ids, generated keys, `apns-id`).
public enum UUIDText {
    /// 128 random bits from the system's CSPRNG (`getrandom(2)` on Linux,
    /// through the standard library: it never returns a weak value).
    public static func randomBits() -> (UInt64, UInt64) {
        var generator = SystemRandomNumberGenerator()
        return (generator.next(), generator.next())
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

    /// The 128 bits of `text` when it is exactly what ``format(high:low:)``
    /// makes (36 characters, lowercase hex, dashes at 8, 13, 18 and 23), so
    /// that formatting them gives `text` back; nil for anything else
    /// (uppercase, braces, other lengths).
    public static func parse(_ text: String) -> (high: UInt64, low: UInt64)? {
        var text = text
        return text.withUTF8 { bytes -> (high: UInt64, low: UInt64)? in
            guard bytes.count == 36 else { return nil }
            var high: UInt64 = 0
            var low: UInt64 = 0
            for index in 0..<36 {
                let byte = bytes[index]
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    guard byte == UInt8(ascii: "-") else { return nil }
                    continue
                }
                let nibble: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte &- 0x30
                case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte &- 0x57
                default: return nil
                }
                if index < 18 {
                    high = high << 4 | UInt64(nibble)
                } else {
                    low = low << 4 | UInt64(nibble)
                }
            }
            return (high, low)
        }
    }
}
