import CInterop
import HeraldPrimitives
import HeraldProtos

@testable import HeraldClient

/// The JSON reader as it was before it wrote wire bytes directly (JSON tree
/// → ProtoValue tree → protoc-c structs → protobuf_c_message_pack), kept
/// only as the oracle of ``ProtoJSONWireEqualityTests``.
///
/// The proto3 JSON mapping, JSON → message, driven by the protoc-c
/// descriptors (no per-message code): members by their lowerCamelCase JSON
/// name or their proto name; 64-bit integers as numbers or strings; enums by
/// name or number; bytes as base64 (standard or URL-safe); repeated fields as
/// arrays; map fields as objects; google.protobuf.Struct, Value and
/// ListValue as plain JSON; `null` as the default. A member the message
/// does not have is an error naming it (a typo is never dropped), as are a
/// value of the wrong type, an integer out of range, bad base64, an enum
/// name the enum lacks, two members for one field and two of one oneof.
/// The JSON itself is read by ``WebJSONReader`` (depth, size, NUL and
/// duplicate-key bounds).
enum LegacyProtoJSONReader {
    /// Reads `bytes` as JSON and packs it as a `type`.
    static func pack(
        _ type: ProtoMessage.MessageType, json bytes: [UInt8], limits: WebJSONReader.Limits = WebJSONReader.Limits()
    ) throws(ProtoJSONError) -> [UInt8] {
        let json: WebJSON
        do {
            json = try WebJSONReader.read(bytes, limits: limits)
        } catch {
            throw ProtoJSONError(error.field ?? "", error.description)
        }
        let value = try message(type.descriptor, json, path: { "" })
        guard case .message(let fields) = value else { return [] }
        do {
            return try ProtoMessage.pack(type, fields)
        } catch {
            throw ProtoJSONError("", error.message)
        }
    }

    /// The fields of a `descriptor` message that `json` stands for.
    static func message(
        _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, _ json: WebJSON, path: () -> String
    ) throws(ProtoJSONError) -> ProtoValue {
        // The well-known JSON types, by name without making a string (this runs per message).
        let cName = descriptor.pointee.name!
        if strcmp(cName, "google.protobuf.Struct") == 0 {
            guard case .object(let members) = json else { throw ProtoJSONError(path(), "must be an object, got \(json.typeName)") }
            return structValue(members)
        }
        if strcmp(cName, "google.protobuf.Value") == 0 { return value(json) }
        if strcmp(cName, "google.protobuf.ListValue") == 0 {
            guard case .array(let items) = json else { throw ProtoJSONError(path(), "must be an array, got \(json.typeName)") }
            return .message([("values", .list(items.map(value)))])
        }
        if case .null = json { return .message([]) }
        guard case .object(let members) = json else { throw ProtoJSONError(path(), "must be an object, got \(json.typeName)") }
        var fields: [(String, ProtoValue)] = []
        var seen = Set<UInt32>()
        var oneofs: [UInt32: String] = [:]
        for member in members {
            // Paths are made only for an error message.
            func memberPath() -> String {
                let parent = path()
                return parent.isEmpty ? member.key : "\(parent).\(member.key)"
            }
            guard let field = Self.field(descriptor, member.key) else {
                throw ProtoJSONError(memberPath(), "unknown field \"\(member.key)\" of \(String(cString: cName))")
            }
            let name = String(cString: field.name)
            guard seen.insert(field.id).inserted else { throw ProtoJSONError(memberPath(), "field \(name) given twice") }
            if case .null = member.value, !isValue(field) { continue }
            if field.flags & UInt32(PROTOBUF_C_FIELD_FLAG_ONEOF.rawValue) != 0 {
                if let other = oneofs[field.quantifier_offset] {
                    throw ProtoJSONError(memberPath(), "\(name) and \(other) are one oneof: give one")
                }
                oneofs[field.quantifier_offset] = name
            }
            fields.append((name, try fieldValue(field, member.value, path: memberPath)))
        }
        return .message(fields)
    }

    /// The field named `key`: its JSON name (lowerCamelCase) or its proto name.
    private static func field(_ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, _ key: String) -> ProtobufCFieldDescriptor? {
        if let names = fieldIndex[UInt(bitPattern: descriptor)] {
            return names[key].map { descriptor.pointee.fields[$0] }
        }
        for index in 0..<Int(descriptor.pointee.n_fields) {
            let field = descriptor.pointee.fields[index]
            let name = String(cString: field.name)
            if key == name || key == ProtoJSON.camelCase(name) { return field }
        }
        return nil
    }

    /// Field indexes by both names, for every message a service method
    /// takes or returns and the messages inside them (by descriptor address),
    /// built once: a lookup is a hash, not a scan that makes strings.
    private static let fieldIndex: [UInt: [String: Int]] = {
        var index: [UInt: [String: Int]] = [:]
        var pending = ProtoServices.methods.values.flatMap { [$0.request.descriptor, $0.reply.descriptor] }
        while let descriptor = pending.popLast() {
            guard index[UInt(bitPattern: descriptor)] == nil else { continue }
            var names: [String: Int] = [:]
            for number in 0..<Int(descriptor.pointee.n_fields) {
                let field = descriptor.pointee.fields[number]
                let name = String(cString: field.name)
                names[name] = number
                names[ProtoJSON.camelCase(name)] = number
                if field.type == PROTOBUF_C_TYPE_MESSAGE {
                    pending.append(field.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self))
                }
            }
            index[UInt(bitPattern: descriptor)] = names
        }
        return index
    }()

    private static func isValue(_ field: ProtobufCFieldDescriptor) -> Bool {
        field.type == PROTOBUF_C_TYPE_MESSAGE && field.label != PROTOBUF_C_LABEL_REPEATED
            && String(cString: field.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self).pointee.name)
            == "google.protobuf.Value"
    }

    private static func fieldValue(_ field: ProtobufCFieldDescriptor, _ json: WebJSON, path: () -> String) throws(ProtoJSONError) -> ProtoValue {
        guard field.label == PROTOBUF_C_LABEL_REPEATED else { return try single(field, json, path: path) }
        if field.type == PROTOBUF_C_TYPE_MESSAGE, ProtoMessage.isMapEntry(field) {
            guard case .object(let members) = json else { throw ProtoJSONError(path(), "must be an object (a map), got \(json.typeName)") }
            let entry = field.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self)
            var entries: [ProtoValue] = []
            for member in members {
                let keyField = entry.pointee.fields[0], valueField = entry.pointee.fields[1]
                func entryPath() -> String { "\(path())[\"\(member.key)\"]" }
                let key = try single(keyField, keyField.type == PROTOBUF_C_TYPE_STRING ? .string(member.key) : mapKey(member.key), path: entryPath)
                guard !(member.value == .null && !isValue(valueField)) else { throw ProtoJSONError(entryPath(), "a map value must not be null") }
                entries.append(.message([("key", key), ("value", try single(valueField, member.value, path: entryPath))]))
            }
            return .list(entries)
        }
        guard case .array(let items) = json else { throw ProtoJSONError(path(), "must be an array, got \(json.typeName)") }
        var values: [ProtoValue] = []
        values.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            func itemPath() -> String { "\(path())[\(index)]" }
            if case .null = item, !(field.type == PROTOBUF_C_TYPE_MESSAGE) { throw ProtoJSONError(itemPath(), "must not be null") }
            values.append(try single(field, item, path: itemPath))
        }
        return .list(values)
    }

    /// A map key written as a JSON member name, for a non-string key type.
    private static func mapKey(_ key: String) -> WebJSON {
        if key == "true" { return .bool(true) }
        if key == "false" { return .bool(false) }
        return .string(key)
    }

    /// One value of `field` (an element, for a repeated one).
    private static func single(_ field: ProtobufCFieldDescriptor, _ json: WebJSON, path: () -> String) throws(ProtoJSONError) -> ProtoValue {
        switch field.type {
        case PROTOBUF_C_TYPE_INT32, PROTOBUF_C_TYPE_SINT32, PROTOBUF_C_TYPE_SFIXED32:
            let number = try ProtoJSONReader.signed(json, path: path)
            guard Int32(exactly: number) != nil else { throw ProtoJSONError(path(), "\(number) is out of range for int32") }
            return .int(number)
        case PROTOBUF_C_TYPE_INT64, PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_SFIXED64:
            return .int(try ProtoJSONReader.signed(json, path: path))
        case PROTOBUF_C_TYPE_UINT32, PROTOBUF_C_TYPE_FIXED32:
            let number = try ProtoJSONReader.unsigned(json, path: path)
            guard UInt32(exactly: number) != nil else { throw ProtoJSONError(path(), "\(number) is out of range for uint32") }
            return .uint(number)
        case PROTOBUF_C_TYPE_UINT64, PROTOBUF_C_TYPE_FIXED64:
            return .uint(try ProtoJSONReader.unsigned(json, path: path))
        case PROTOBUF_C_TYPE_FLOAT, PROTOBUF_C_TYPE_DOUBLE:
            let number = try ProtoJSONReader.floating(json, path: path)
            if field.type == PROTOBUF_C_TYPE_FLOAT, number.isFinite, !Float(number).isFinite {
                throw ProtoJSONError(path(), "\(number) is out of range for float")
            }
            return .double(number)
        case PROTOBUF_C_TYPE_BOOL:
            guard case .bool(let flag) = json else { throw ProtoJSONError(path(), "must be true or false, got \(json.typeName)") }
            return .bool(flag)
        case PROTOBUF_C_TYPE_STRING:
            guard case .string(let text) = json else { throw ProtoJSONError(path(), "must be a string, got \(json.typeName)") }
            return .string(text)
        case PROTOBUF_C_TYPE_BYTES:
            guard case .string(let text) = json else { throw ProtoJSONError(path(), "must be a base64 string, got \(json.typeName)") }
            guard let bytes = Base64.decodeURL(text) else { throw ProtoJSONError(path(), "is not valid base64") }
            return .bytes(bytes)
        case PROTOBUF_C_TYPE_ENUM:
            let descriptor = field.descriptor.assumingMemoryBound(to: ProtobufCEnumDescriptor.self)
            func enumName() -> String { String(cString: descriptor.pointee.name) }
            switch json {
            case .string(let name):
                guard protobuf_c_enum_descriptor_get_value_by_name(descriptor, name) != nil else {
                    throw ProtoJSONError(path(), "\"\(name)\" is not a value of \(enumName())")
                }
                return .enumName(name)
            case .number(_, let integer?):
                guard let number = Int32(exactly: integer), let known = protobuf_c_enum_descriptor_get_value(descriptor, number) else {
                    throw ProtoJSONError(path(), "\(integer) is not a value of \(enumName())")
                }
                return .enumName(String(cString: known.pointee.name))
            default:
                throw ProtoJSONError(path(), "must be a \(enumName()) name or number, got \(json.typeName)")
            }
        case PROTOBUF_C_TYPE_MESSAGE:
            return try message(field.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self), json, path: path)
        default:
            throw ProtoJSONError(path(), "has a type the JSON mapping does not read")
        }
    }

    // MARK: google.protobuf.Struct

    private static func structValue(_ members: [WebJSON.Member]) -> ProtoValue {
        .message([("fields", .list(members.map { .message([("key", .string($0.key)), ("value", value($0.value))]) }))])
    }

    /// `json` as a google.protobuf.Value.
    private static func value(_ json: WebJSON) -> ProtoValue {
        switch json {
        case .null: .message([("null_value", .enumName("NULL_VALUE"))])
        case .bool(let flag): .message([("bool_value", .bool(flag))])
        case .number(let number, _): .message([("number_value", .double(number))])
        case .string(let text): .message([("string_value", .string(text))])
        case .array(let items): .message([("list_value", .message([("values", .list(items.map(value)))]))])
        case .object(let members): .message([("struct_value", structValue(members))])
        }
    }
}
