/// Percent-decoding (`%XY` is a byte), strict: one decoder for the
/// console's query strings and the FCM simulator's token endpoint
/// (`application/x-www-form-urlencoded`, where `+` is a space) and
/// PostgreSQL URLs (where it is not). `hexValue` also serves gRPC's lenient
/// `grpc-message` decoding (`GRPCPercentEncoding`).
public enum PercentDecoding {
    /// The decoded bytes, or nil for a malformed escape (`%` without two hex
    /// digits); `plusIsSpace`: a `+` is a space (form encoding).
    public static func bytes(_ input: some Collection<UInt8>, plusIsSpace: Bool) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(input.count)
        var iterator = input.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+") where plusIsSpace: out.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                out.append(high << 4 | low)
            default: out.append(byte)
            }
        }
        return out
    }

    /// The value of an ASCII hex digit, or nil.
    public static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
