/// Request metadata: the custom (non-pseudo) headers of a call, in arrival order.
/// Names are lowercase (HTTP/2 requires it); `-bin` values are kept as the base64
/// text received, and `binaryValue(_:)` decodes them.
///
/// Stored as one packed byte array (the server fills it straight from nghttp2's
/// header callbacks); `String`s are only made when a handler asks.
public struct GRPCMetadata: Sendable, Sequence, Hashable {
    public struct Entry: Sendable, Hashable {
        public var name: String
        public var value: String
    }

    /// Repeated: name length (UInt16, little-endian), value length (UInt32, little-endian), name, value.
    @usableFromInline var storage: [UInt8]

    public init() { storage = [] }

    public init(_ pairs: [(String, String)]) {
        storage = []
        for (name, value) in pairs { append(name: name.lowercased(), value: value) }
    }

    /// The first value for `name` (names are lowercase).
    public subscript(_ name: String) -> String? {
        var result: String?
        forEachEntry(named: name) { value in
            result = String(decoding: value, as: UTF8.self)
            return false
        }
        return result
    }

    /// Every value for `name`, in order.
    public func values(_ name: String) -> [String] {
        var result: [String] = []
        forEachEntry(named: name) { value in
            result.append(String(decoding: value, as: UTF8.self))
            return true
        }
        return result
    }

    /// The decoded bytes of a `-bin` header (padded or unpadded base64); `nil` if absent or invalid.
    public func binaryValue(_ name: String) -> [UInt8]? {
        guard let text = self[name] else { return nil }
        return Base64.decode(text)
    }

    public var count: Int {
        var count = 0
        var iterator = makeIterator()
        while iterator.nextRange() != nil { count += 1 }
        return count
    }

    public var isEmpty: Bool { storage.isEmpty }

    public mutating func append(name: String, value: String) {
        var name = name
        var value = value
        name.withUTF8 { nameBytes in
            value.withUTF8 { valueBytes in
                append(name: UnsafeRawBufferPointer(nameBytes), value: UnsafeRawBufferPointer(valueBytes))
            }
        }
    }

    /// Appends raw header bytes (names longer than 65535 bytes are dropped; HTTP/2
    /// header lists are bounded far below that).
    mutating func append(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        guard name.count <= Int(UInt16.max) else { return }
        if storage.isEmpty { storage.reserveCapacity(128) }
        let nameLength = UInt16(name.count)
        let valueLength = UInt32(truncatingIfNeeded: value.count)
        storage.append(UInt8(truncatingIfNeeded: nameLength))
        storage.append(UInt8(truncatingIfNeeded: nameLength >> 8))
        storage.append(UInt8(truncatingIfNeeded: valueLength))
        storage.append(UInt8(truncatingIfNeeded: valueLength >> 8))
        storage.append(UInt8(truncatingIfNeeded: valueLength >> 16))
        storage.append(UInt8(truncatingIfNeeded: valueLength >> 24))
        storage.append(contentsOf: name)
        storage.append(contentsOf: value)
    }

    /// Calls `body` with the value bytes of each entry named `name` until it returns false.
    private func forEachEntry(named name: String, _ body: (UnsafeRawBufferPointer) -> Bool) {
        var name = name
        name.withUTF8 { nameBytes in
            storage.withUnsafeBytes { raw in
                var iterator = makeIterator()
                while let (nameRange, valueRange) = iterator.nextRange() {
                    guard nameRange.count == nameBytes.count,
                          UnsafeRawBufferPointer(rebasing: raw[nameRange]).elementsEqual(nameBytes)
                    else { continue }
                    if !body(UnsafeRawBufferPointer(rebasing: raw[valueRange])) { return }
                }
            }
        }
    }

    public struct Iterator: IteratorProtocol {
        let storage: [UInt8]
        var offset = 0

        mutating func nextRange() -> (Range<Int>, Range<Int>)? {
            guard offset + 6 <= storage.count else { return nil }
            let nameLength = Int(storage[offset]) | Int(storage[offset + 1]) << 8
            let valueLength = Int(storage[offset + 2]) | Int(storage[offset + 3]) << 8
                | Int(storage[offset + 4]) << 16 | Int(storage[offset + 5]) << 24
            let nameStart = offset + 6
            let valueStart = nameStart + nameLength
            offset = valueStart + valueLength
            return (nameStart..<valueStart, valueStart..<offset)
        }

        public mutating func next() -> Entry? {
            guard let (nameRange, valueRange) = nextRange() else { return nil }
            return Entry(
                name: String(decoding: storage[nameRange], as: UTF8.self),
                value: String(decoding: storage[valueRange], as: UTF8.self))
        }
    }

    public func makeIterator() -> Iterator { Iterator(storage: storage) }
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
