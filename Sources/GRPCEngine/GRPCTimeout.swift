/// A parsed `grpc-timeout` header: 1–8 ASCII digits followed by one unit
/// (`H` hours, `M` minutes, `S` seconds, `m` milliseconds, `u` microseconds,
/// `n` nanoseconds). Anything else is malformed; the server rejects such a call
/// with INVALID_ARGUMENT rather than guessing a deadline.
public struct GRPCTimeout: Sendable, Hashable {
    public var duration: Duration

    public init(_ duration: Duration) { self.duration = duration }

    /// Parses a header value; `nil` when malformed (empty, no unit, bad unit, sign, > 8 digits).
    public init?(header: some StringProtocol) {
        let utf8 = header.utf8
        let count = utf8.count
        guard count >= 2, count <= 9 else { return nil }
        var amount: Int64 = 0
        var index = utf8.startIndex
        for _ in 0..<(count - 1) {
            let byte = utf8[index]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            amount = amount * 10 + Int64(byte - UInt8(ascii: "0"))
            index = utf8.index(after: index)
        }
        switch utf8[index] {
        case UInt8(ascii: "H"): duration = .seconds(amount * 3600)
        case UInt8(ascii: "M"): duration = .seconds(amount * 60)
        case UInt8(ascii: "S"): duration = .seconds(amount)
        case UInt8(ascii: "m"): duration = .milliseconds(amount)
        case UInt8(ascii: "u"): duration = .microseconds(amount)
        case UInt8(ascii: "n"): duration = .nanoseconds(amount)
        default: return nil
        }
    }

    /// Parses raw header bytes (the hot path avoids building a String).
    public init?(bytes: UnsafeRawBufferPointer) {
        guard let value = String(validating: bytes, as: UTF8.self) else { return nil }
        self.init(header: value)
    }
}
