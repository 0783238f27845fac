import HeraldPrimitives

/// Percent-encoding of `grpc-message` (gRPC PROTOCOL-HTTP2): printable ASCII
/// (0x20–0x7E) except `%` is sent as is; every other byte of the UTF-8 form is `%XX`.
public enum GRPCPercentEncoding {
    /// Encodes `message` for the `grpc-message` trailer.
    public static func encode(_ message: String) -> String {
        let utf8 = message.utf8
        if utf8.allSatisfy({ !needsEscape($0) }) { return message }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count * 3)
        for byte in utf8 {
            if needsEscape(byte) {
                out.append(UInt8(ascii: "%"))
                out.append(hexDigit(byte >> 4))
                out.append(hexDigit(byte & 0x0F))
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes a `grpc-message` value. Malformed `%` sequences are kept verbatim and
    /// invalid UTF-8 becomes U+FFFD, as the protocol asks receivers to be lenient.
    public static func decode(_ value: String) -> String {
        let bytes = Array(value.utf8)
        guard bytes.contains(UInt8(ascii: "%")) else { return value }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count,
               let high = PercentDecoding.hexValue(bytes[index + 1]), let low = PercentDecoding.hexValue(bytes[index + 2]) {
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(byte)
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    @inline(__always)
    static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte > 0x7E || byte == UInt8(ascii: "%")
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") + nibble - 10
    }
}
