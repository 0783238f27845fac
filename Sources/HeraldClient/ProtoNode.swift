public import HeraldPrimitives

/// A decoded reply message: the fields protoc-c unpacked, in declaration
/// order, for a table (``ProtoTable``) or the proto3 JSON mapping (``ProtoJSON``).
public indirect enum ProtoNode: Sendable, Equatable {
    /// A scalar: its JSON value and its text for a table.
    case scalar(json: JSONValue, text: String)
    /// A message: its set fields in order (proto names).
    case message([ProtoField])
    /// A repeated field.
    case list([ProtoNode])
    /// A map field (string keys).
    case map([ProtoField])
    /// google.protobuf.Struct / Value / ListValue, already JSON.
    case json(JSONValue)

    /// The field named `name` of a message.
    public subscript(name: String) -> ProtoNode? {
        guard case .message(let fields) = self else { return nil }
        return fields.first { $0.name == name }?.node
    }

    /// A scalar's table text ("" for anything else).
    public var text: String {
        if case .scalar(_, let text) = self { return text }
        return ""
    }
}

/// One field of a ``ProtoNode`` message.
public struct ProtoField: Sendable, Equatable {
    /// The proto field name (snake_case), or a map key.
    public var name: String
    /// Its value.
    public var node: ProtoNode

    /// A field named `name` holding `node`.
    public init(_ name: String, _ node: ProtoNode) {
        self.name = name
        self.node = node
    }
}
