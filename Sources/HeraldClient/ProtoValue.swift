public import HeraldPrimitives

/// A field value of a request message, by the field's proto name: what
/// ``ProtoMessage/pack(_:_:)`` turns into a protoc-c struct and packs.
public indirect enum ProtoValue: Sendable, Equatable {
    /// string fields.
    case string(String)
    /// int32/sint32/sfixed32/int64/… fields (range-checked when packed).
    case int(Int64)
    /// uint32/fixed32/uint64/fixed64 fields (range-checked when packed).
    case uint(UInt64)
    /// bool fields.
    case bool(Bool)
    /// double fields (google.protobuf.Value's number_value).
    case double(Double)
    /// bytes fields.
    case bytes([UInt8])
    /// An enum value by its proto name, e.g. `PLATFORM_IOS`.
    case enumName(String)
    /// A sub-message (or a map entry: `key` and `value`).
    case message([(String, ProtoValue)])
    /// A repeated field (a map is a list of entry messages).
    case list([ProtoValue])

    /// Field by field (names and values in order).
    public static func == (a: ProtoValue, b: ProtoValue) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)): x == y
        case (.int(let x), .int(let y)): x == y
        case (.uint(let x), .uint(let y)): x == y
        case (.bool(let x), .bool(let y)): x == y
        case (.double(let x), .double(let y)): x == y
        case (.bytes(let x), .bytes(let y)): x == y
        case (.enumName(let x), .enumName(let y)): x == y
        case (.message(let x), .message(let y)): x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.list(let x), .list(let y)): x == y
        default: false
        }
    }
}

extension ProtoValue {
    /// `json` as a google.protobuf.Struct (it must be an object).
    ///
    /// - Throws: a local ``ClientFailure`` naming `flag` when it is not an object.
    public static func structValue(_ json: JSONValue, flag: String) throws(ClientFailure) -> ProtoValue {
        guard case .object(let members) = json else { throw .local("\(flag) must be a JSON object") }
        return .message([("fields", .list(members.map { .message([("key", .string($0.key)), ("value", value($0.value))]) }))])
    }

    /// `json` as a google.protobuf.Value.
    static func value(_ json: JSONValue) -> ProtoValue {
        switch json {
        case .null: .message([("null_value", .enumName("NULL_VALUE"))])
        case .bool(let flag): .message([("bool_value", .bool(flag))])
        case .number(let number): .message([("number_value", .double(number))])
        case .string(let text): .message([("string_value", .string(text))])
        case .array(let items): .message([("list_value", .message([("values", .list(items.map(value)))]))])
        case .object(let members):
            .message([("struct_value", .message([("fields", .list(members.map {
                .message([("key", .string($0.key)), ("value", value($0.value))])
            }))]))])
        }
    }
}
