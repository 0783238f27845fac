/// Random (version 4) UUIDs, lowercase: the `apns-id` the simulator assigns
/// when a request has none (as `UUID().uuidString.lowercased()` was).
enum SimulatorUUID {
    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        var high = generator.next() as UInt64
        var low = generator.next() as UInt64
        high = (high & ~0xF000) | 0x4000                      // version 4
        low = (low & ~(0xC000 << 48)) | (0x8000 << 48)        // RFC 4122 variant
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(36)
        for (index, shift) in stride(from: 60, through: 0, by: -4).enumerated() {
            if index == 8 || index == 12 { out.append(UInt8(ascii: "-")) }
            out.append(digits[Int((high >> UInt64(shift)) & 0xF)])
        }
        for (index, shift) in stride(from: 60, through: 0, by: -4).enumerated() {
            if index == 0 || index == 4 { out.append(UInt8(ascii: "-")) }
            out.append(digits[Int((low >> UInt64(shift)) & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
