/// Standard base64 (RFC 4648 §4) and base64url (§5) without Foundation.
public enum Base64 {
    private static let standard = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let url = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Encodes `bytes`; base64url alphabet and no `=` padding when `url`.
    public static func encode(_ bytes: [UInt8], url: Bool = false) -> String {
        let alphabet = url ? Self.url : Self.standard
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out.append(alphabet[Int(value >> 18 & 63)])
            out.append(alphabet[Int(value >> 12 & 63)])
            out.append(alphabet[Int(value >> 6 & 63)])
            out.append(alphabet[Int(value & 63)])
            index += 3
        }
        let rest = bytes.count - index
        if rest > 0 {
            let value = UInt32(bytes[index]) << 16 | (rest == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
            out.append(alphabet[Int(value >> 18 & 63)])
            out.append(alphabet[Int(value >> 12 & 63)])
            if rest == 2 { out.append(alphabet[Int(value >> 6 & 63)]) }
            if !url { out.append(contentsOf: rest == 2 ? [61] : [61, 61]) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes base64url or base64, padded or not (padding only at the end,
    /// completing a multiple of 4); nil for characters outside the alphabets
    /// or a length of 4n+1.
    public static func decodeURL(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        var end = utf8.count
        if end % 4 == 0 {
            var padding = 0
            while padding < 2 && end > 0 && utf8[end - 1] == UInt8(ascii: "=") { end -= 1; padding += 1 }
        }
        var out: [UInt8] = []
        out.reserveCapacity(end * 3 / 4)
        var accumulator: UInt32 = 0
        var count = 0
        for byte in utf8[..<end] {
            let value: UInt32
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(byte - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(byte - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(byte - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "-"), UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "_"), UInt8(ascii: "/"): value = 63
            default: return nil
            }
            accumulator = accumulator << 6 | value
            count += 1
            if count == 4 {
                out.append(UInt8(accumulator >> 16 & 0xFF))
                out.append(UInt8(accumulator >> 8 & 0xFF))
                out.append(UInt8(accumulator & 0xFF))
                accumulator = 0
                count = 0
            }
        }
        switch count {
        case 0: break
        case 2: out.append(UInt8(accumulator >> 4 & 0xFF))
        case 3:
            out.append(UInt8(accumulator >> 10 & 0xFF))
            out.append(UInt8(accumulator >> 2 & 0xFF))
        default: return nil
        }
        return out
    }
}
