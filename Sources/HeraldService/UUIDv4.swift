import CInterop
#if canImport(Glibc)
import Glibc
#endif

/// Random (version 4) UUIDs, lowercase, as APNs' `apns-id` uses them.
public enum UUIDv4 {
    /// 16 random bytes from one `getrandom` call, formatted into one
    /// 36-byte string.
    public static func make() -> String {
        var bytes: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &bytes) { buffer in
            var filled = 0
            while filled < 16 {
                let count = getrandom(buffer.baseAddress! + filled, 16 - filled, 0)
                if count > 0 { filled += count } else if errno != EINTR { break }
            }
            if filled < 16 {
                // getrandom cannot fail on Linux ≥ 3.17 once the pool is
                // ready; fall back to the standard generator rather than zeros.
                var generator = SystemRandomNumberGenerator()
                buffer.storeBytes(of: generator.next() as UInt64, toByteOffset: 0, as: UInt64.self)
                buffer.storeBytes(of: generator.next() as UInt64, toByteOffset: 8, as: UInt64.self)
            }
        }
        let high = (bytes.0 & ~0xF000) | 0x4000                    // version 4
        let low = (bytes.1 & ~(0xC000 << 48)) | (0x8000 << 48)      // RFC 4122 variant
        return String(unsafeUninitializedCapacity: 36) { out in
            var index = 0
            func put(_ value: UInt64, digits: Int) {
                for shift in stride(from: (digits - 1) * 4, through: 0, by: -4) {
                    let nibble = UInt8((value >> UInt64(shift)) & 0xF)
                    out[index] = nibble < 10 ? 0x30 + nibble : 0x57 + nibble
                    index += 1
                }
            }
            func dash() { out[index] = UInt8(ascii: "-"); index += 1 }
            put(high >> 32, digits: 8); dash()
            put(high >> 16, digits: 4); dash()
            put(high, digits: 4); dash()
            put(low >> 48, digits: 4); dash()
            put(low, digits: 12)
            return index
        }
    }
}
