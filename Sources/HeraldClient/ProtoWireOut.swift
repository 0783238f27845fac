/// Protobuf wire encoding into a byte array, for ``ProtoJSONReader``: tags,
/// varints, fixed-width and length-delimited fields, and the well-known
/// google.protobuf.Struct / Value / ListValue written from plain JSON.
enum ProtoWireOut {
    private static let varintType: UInt64 = 0, fixed64Type: UInt64 = 1, delimitedType: UInt64 = 2, fixed32Type: UInt64 = 5

    static func rawVarint(_ value: UInt64, into out: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        out.append(UInt8(value))
    }

    static func zigzag(_ value: Int64) -> UInt64 {
        UInt64(bitPattern: (value << 1) ^ (value >> 63))
    }

    static func varint(_ field: UInt32, _ value: UInt64, into out: inout [UInt8]) {
        rawVarint(UInt64(field) << 3 | varintType, into: &out)
        rawVarint(value, into: &out)
    }

    static func fixed32(_ field: UInt32, _ value: UInt32, into out: inout [UInt8]) {
        rawVarint(UInt64(field) << 3 | fixed32Type, into: &out)
        withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
    }

    static func fixed64(_ field: UInt32, _ value: UInt64, into out: inout [UInt8]) {
        rawVarint(UInt64(field) << 3 | fixed64Type, into: &out)
        withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
    }

    static func lengthDelimited<Bytes: Collection>(_ field: UInt32, _ body: Bytes, into out: inout [UInt8]) where Bytes.Element == UInt8 {
        rawVarint(UInt64(field) << 3 | delimitedType, into: &out)
        rawVarint(UInt64(body.count), into: &out)
        out.append(contentsOf: body)
    }

    static func string(_ field: UInt32, _ text: String, into out: inout [UInt8]) {
        var text = text
        text.withUTF8 { lengthDelimited(field, $0, into: &out) }
    }

    // MARK: google.protobuf.Struct, Value, ListValue

    /// The fields of a google.protobuf.Struct (`fields`, 1: map<string, Value>).
    static func structFields(_ members: [WebJSON.Member], into out: inout [UInt8]) {
        for member in members {
            var entry: [UInt8] = []
            string(1, member.key, into: &entry)
            var value: [UInt8] = []
            valueFields(member.value, into: &value)
            lengthDelimited(2, value, into: &entry)
            lengthDelimited(1, entry, into: &out)
        }
    }

    /// The fields of a google.protobuf.ListValue (`values`, 1: repeated Value).
    static func listFields(_ items: [WebJSON], into out: inout [UInt8]) {
        for item in items {
            var value: [UInt8] = []
            valueFields(item, into: &value)
            lengthDelimited(1, value, into: &out)
        }
    }

    /// The fields of a google.protobuf.Value standing for `json` (its oneof
    /// `kind`: null_value 1, number_value 2, string_value 3, bool_value 4,
    /// struct_value 5, list_value 6).
    static func valueFields(_ json: WebJSON, into out: inout [UInt8]) {
        switch json {
        case .null: varint(1, 0, into: &out)
        case .number(let number, _): fixed64(2, number.bitPattern, into: &out)
        case .string(let text): string(3, text, into: &out)
        case .bool(let flag): varint(4, flag ? 1 : 0, into: &out)
        case .object(let members):
            var body: [UInt8] = []
            structFields(members, into: &body)
            lengthDelimited(5, body, into: &out)
        case .array(let items):
            var body: [UInt8] = []
            listFields(items, into: &body)
            lengthDelimited(6, body, into: &out)
        }
    }
}
