/// Protocol-buffer wire bytes written by hand for the few messages the web
/// API builds (a ScheduleRequest from JSON) and reads (the replies): no
/// C structs to fill, and the bytes are exactly what a gRPC client sends.
struct ProtoWriter {
    private(set) var bytes: [UInt8] = []

    mutating func varint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    private mutating func tag(_ field: UInt32, _ wireType: UInt32) { varint(UInt64(field << 3 | wireType)) }

    /// A varint field (enum, bool, uint32; a negative int32 as ten bytes), always written.
    mutating func varint(_ field: UInt32, _ value: Int64) {
        tag(field, 0)
        varint(UInt64(bitPattern: value))
    }

    /// A double field (fixed 64).
    mutating func double(_ field: UInt32, _ value: Double) {
        tag(field, 1)
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// A string field, always written (a oneof member's presence).
    mutating func string(_ field: UInt32, _ value: String) {
        tag(field, 2)
        varint(UInt64(value.utf8.count))
        bytes.append(contentsOf: value.utf8)
    }

    /// A string field, skipped when empty (proto3 default).
    mutating func optionalString(_ field: UInt32, _ value: String?) {
        if let value, !value.isEmpty { string(field, value) }
    }

    /// An embedded message field.
    mutating func message(_ field: UInt32, _ body: (inout ProtoWriter) -> Void) {
        var inner = ProtoWriter()
        body(&inner)
        tag(field, 2)
        varint(UInt64(inner.bytes.count))
        bytes.append(contentsOf: inner.bytes)
    }
}

/// The fields of one message, read from its wire bytes: varints and
/// length-delimited values by field number (the last one wins, as protobuf
/// says; repeated strings are collected).
struct ProtoFields {
    var varints: [UInt32: UInt64] = [:]
    var strings: [UInt32: [String]] = [:]

    /// Nil for bytes that are not a well-formed message.
    init?(_ bytes: [UInt8]) {
        var index = 0
        func varint() -> UInt64? {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while index < bytes.count, shift < 64 {
                let byte = bytes[index]
                index += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { return value }
                shift += 7
            }
            return nil
        }
        while index < bytes.count {
            guard let key = varint() else { return nil }
            let field = UInt32(truncatingIfNeeded: key >> 3)
            switch key & 7 {
            case 0:
                guard let value = varint() else { return nil }
                varints[field] = value
            case 1:
                guard index + 8 <= bytes.count else { return nil }
                index += 8
            case 2:
                guard let length = varint(), length <= UInt64(bytes.count - index) else { return nil }
                let end = index + Int(length)
                strings[field, default: []].append(String(decoding: bytes[index..<end], as: UTF8.self))
                index = end
            case 5:
                guard index + 4 <= bytes.count else { return nil }
                index += 4
            default:
                return nil
            }
        }
    }

    func string(_ field: UInt32) -> String { strings[field]?.last ?? "" }
    func bool(_ field: UInt32) -> Bool { (varints[field] ?? 0) != 0 }
    func int(_ field: UInt32) -> Int { Int(truncatingIfNeeded: varints[field] ?? 0) }
}
