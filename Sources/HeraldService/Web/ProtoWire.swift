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

    /// Nil for bytes that are not a well-formed message (`WireReader`'s
    /// rules: a field number 0, a group or an unknown wire type is one).
    init?(_ bytes: [UInt8]) {
        var varints: [UInt32: UInt64] = [:]
        var strings: [UInt32: [String]] = [:]
        let wellFormed = bytes.withUnsafeBytes { raw -> Bool in
            var reader = WireReader(bytes: raw, offset: 0, end: raw.count)
            while !reader.atEnd {
                guard let field = reader.field() else { return false }
                switch field.wireType {
                case 0:
                    // The value is the field's second varint (after its key).
                    var value = WireReader(bytes: raw, offset: field.range.lowerBound, end: field.range.upperBound)
                    _ = value.varint()
                    varints[field.number] = value.varint()
                case 2:
                    guard let payload = field.payload else { return false }
                    strings[field.number, default: []].append(String(decoding: raw[payload], as: UTF8.self))
                default:
                    break  // fixed-width values: skipped
                }
            }
            return true
        }
        guard wellFormed else { return nil }
        self.varints = varints
        self.strings = strings
    }

    func string(_ field: UInt32) -> String { strings[field]?.last ?? "" }
    func bool(_ field: UInt32) -> Bool { (varints[field] ?? 0) != 0 }
    func int(_ field: UInt32) -> Int { Int(truncatingIfNeeded: varints[field] ?? 0) }
}
