/// Finds where a top-level member's value lies in a JSON object's bytes, so
/// the simulator can keep the `message` object exactly as received (key
/// order, number spelling). Only called on bytes `JSONParser` accepted, so
/// it skips values by their delimiters without re-validating them.
enum JSONSpan {
    /// The byte range of the value of the last top-level member `name`
    /// (`JSONParser` keeps the last of duplicate keys too); nil if absent.
    static func member(_ name: String, in bytes: [UInt8]) -> Range<Int>? {
        var index = skipSpace(bytes, 0)
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { return nil }
        index += 1
        let wanted = Array(name.utf8)
        var found: Range<Int>?
        while true {
            index = skipSpace(bytes, index)
            guard index < bytes.count else { return found }
            if bytes[index] == UInt8(ascii: "}") { return found }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            guard bytes[index] == UInt8(ascii: "\"") else { return found }
            let keyEnd = skipString(bytes, index)
            // Keys with escapes never equal a plain member name: compare raw.
            let key = bytes[(index + 1)..<max(index + 1, keyEnd - 1)]
            index = skipSpace(bytes, keyEnd)
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return found }
            index = skipSpace(bytes, index + 1)
            let valueEnd = skipValue(bytes, index)
            if key.elementsEqual(wanted) { found = index..<valueEnd }
            index = valueEnd
        }
    }

    private static func skipSpace(_ bytes: [UInt8], _ start: Int) -> Int {
        var index = start
        while index < bytes.count, isSpace(bytes[index]) { index += 1 }
        return index
    }

    @inline(__always)
    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// `start` is at the opening quote; returns the index after the closing one.
    private static func skipString(_ bytes: [UInt8], _ start: Int) -> Int {
        var index = start + 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return index + 1
            default: index += 1
            }
        }
        return bytes.count
    }

    /// Returns the index after the value starting at `start`.
    private static func skipValue(_ bytes: [UInt8], _ start: Int) -> Int {
        guard start < bytes.count else { return start }
        switch bytes[start] {
        case UInt8(ascii: "\""):
            return skipString(bytes, start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var index = start
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    index = skipString(bytes, index)
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return index + 1 }
                default:
                    break
                }
                index += 1
            }
            return bytes.count
        default:
            var index = start
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: ",") || byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") || isSpace(byte) { break }
                index += 1
            }
            return index
        }
    }
}
