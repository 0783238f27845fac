/// Request metadata: the custom (non-pseudo) headers of a call, in arrival order.
/// Names are lowercase (HTTP/2 requires it); `-bin` values are kept as the base64
/// text received, and `binaryValue(_:)` decodes them.
public struct GRPCMetadata: Sendable, Sequence, Hashable {
    public struct Entry: Sendable, Hashable {
        public var name: String
        public var value: String
    }

    @usableFromInline var entries: [Entry]

    public init() { entries = [] }

    public init(_ pairs: [(String, String)]) {
        entries = pairs.map { Entry(name: $0.0.lowercased(), value: $0.1) }
    }

    /// The first value for `name` (case-insensitive lookups use the lowercase name).
    public subscript(_ name: String) -> String? {
        for entry in entries where entry.name == name { return entry.value }
        return nil
    }

    /// Every value for `name`, in order.
    public func values(_ name: String) -> [String] {
        entries.compactMap { $0.name == name ? $0.value : nil }
    }

    /// The decoded bytes of a `-bin` header (padded or unpadded base64); `nil` if absent or invalid.
    public func binaryValue(_ name: String) -> [UInt8]? {
        guard let text = self[name] else { return nil }
        return Base64.decode(text)
    }

    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }

    public mutating func append(name: String, value: String) {
        entries.append(Entry(name: name, value: value))
    }

    public func makeIterator() -> IndexingIterator<[Entry]> { entries.makeIterator() }
}

/// Base64 decoding for `-bin` metadata (standard alphabet, padding optional).
enum Base64 {
    static func decode(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        var sawPadding = false
        for byte in text.utf8 {
            let value: UInt32
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(byte - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(byte - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(byte - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "+"), UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "/"), UInt8(ascii: "_"): value = 63
            case UInt8(ascii: "="): sawPadding = true; continue
            default: return nil
            }
            if sawPadding { return nil }
            accumulator = accumulator << 6 | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return bits >= 6 ? nil : out
    }
}
