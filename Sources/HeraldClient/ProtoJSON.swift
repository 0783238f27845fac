public import HeraldPrimitives

/// A reply as JSON: the proto3 JSON mapping (lowerCamelCase names, enums by
/// name, 64-bit integers as strings, Struct as plain JSON) with scalar
/// fields present even at their default, so a script can index them.
public enum ProtoJSON {
    /// `node` as a JSON value.
    public static func value(_ node: ProtoNode) -> JSONValue {
        switch node {
        case .scalar(let json, _), .json(let json): json
        case .list(let nodes): .array(nodes.map(value))
        case .map(let fields): .object(JSONObject(fields.map { (key: $0.name, value: value($0.node)) }))
        case .message(let fields): .object(JSONObject(fields.map { (key: camelCase($0.name), value: value($0.node)) }))
        }
    }

    /// One line of compact JSON.
    public static func line(_ node: ProtoNode) -> String {
        var writer = JSONWriter()
        writer.writeLenient(value(node))
        return writer.string
    }

    /// `oldest_due_lag_ms` → `oldestDueLagMs` (the field names of the
    /// services' messages from a table made once).
    static func camelCase(_ name: String) -> String {
        jsonNames[name] ?? spelledCamelCase(name)
    }

    /// Every field name of the messages the services take and return, in its JSON spelling.
    private static let jsonNames: [String: String] = {
        var names: [String: String] = [:]
        for name in ProtoServices.fieldNames { names[name] = spelledCamelCase(name) }
        return names
    }()

    private static func spelledCamelCase(_ name: String) -> String {
        var out = ""
        var upper = false
        for character in name {
            if character == "_" {
                upper = true
            } else {
                out.append(upper ? Character(character.uppercased()) : character)
                upper = false
            }
        }
        return out
    }
}
