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
}
