import CInterop
import HeraldPrimitives
import HeraldProtos

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
public enum ProtoJSONReader {
    /// Reads `bytes` as JSON and packs it as a `type`: protobuf wire bytes
    /// written as the JSON text is read (objects and arrays of messages are
    /// not built as a tree; scalars, google.protobuf.Struct/Value/ListValue
    /// and anything refused go through ``WebJSON``): no value tree, no
    /// protoc-c structs, no protobuf_c_message_pack. On any error the whole
    /// body is read again as ``WebJSON`` first, so that a JSON error anywhere
    /// in the body wins over a mapping error, as when the tree was read whole.
    public static func pack(
        _ type: ProtoMessage.MessageType, json bytes: [UInt8], limits: WebJSONReader.Limits = WebJSONReader.Limits()
    ) throws(ProtoJSONError) -> [UInt8] {
        var reader = WebJSONReader(bytes: bytes, limits: limits)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        do {
            reader.skipWhitespace()
            try streamMessage(type.descriptor, &reader, depth: 0, path: { "" }, into: &out)
            reader.skipWhitespace()
            guard reader.index == bytes.count else { throw reader.error("unexpected bytes after the JSON value") }
            return out
        } catch {
            do {
                _ = try WebJSONReader.read(bytes, limits: limits)
            } catch {
                throw ProtoJSONError(error.field ?? "", error.description)
            }
            switch error {
            case let error as ProtoJSONError: throw error
            case let error as WebJSONError: throw ProtoJSONError(error.field ?? "", error.description)
            default: throw ProtoJSONError("", "\(error)")
            }
        }
    }

    /// Whether `byte` opens an object (`{`) and `descriptor` is not one of
    /// the well-known JSON types (read as a tree).
    private static func opensMessage(_ reader: WebJSONReader, _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>) -> Bool {
        guard reader.index < reader.bytes.count, reader.bytes[reader.index] == UInt8(ascii: "{") else { return false }
        let name = descriptor.pointee.name!
        return strcmp(name, "google.protobuf.Struct") != 0 && strcmp(name, "google.protobuf.Value") != 0
            && strcmp(name, "google.protobuf.ListValue") != 0
    }

    /// Reads a `descriptor` message at the reader and writes its fields: an
    /// object member by member, anything else through the tree.
    private static func streamMessage(
        _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, _ reader: inout WebJSONReader, depth: Int, path: () -> String,
        into out: inout [UInt8]
    ) throws {
        guard opensMessage(reader, descriptor) else {
            try message(descriptor, try reader.value(depth: depth, path: path), path: path, into: &out)
            return
        }
        var seen: [UInt32] = []
        var oneofs: [(UInt32, String)] = []
        try streamObject(&reader, depth: depth, path: path) { key, reader, memberPath throws in
            guard let field = Self.field(descriptor, key) else {
                throw ProtoJSONError(memberPath(), "unknown field \"\(key)\" of \(String(cString: descriptor.pointee.name))")
            }
            func name() -> String { String(cString: field.name) }
            guard !seen.contains(field.id) else { throw ProtoJSONError(memberPath(), "field \(name()) given twice") }
            seen.append(field.id)
            let isOneof = field.flags & UInt32(PROTOBUF_C_FIELD_FLAG_ONEOF.rawValue) != 0
            let always = isOneof || field.label != PROTOBUF_C_LABEL_NONE
            let opens = reader.index < reader.bytes.count ? reader.bytes[reader.index] : 0
            let streamed: Bool
            if field.label == PROTOBUF_C_LABEL_REPEATED {
                streamed = opens == UInt8(ascii: field.type == PROTOBUF_C_TYPE_MESSAGE && ProtoMessage.isMapEntry(field) ? "{" : "[")
            } else {
                streamed = field.type == PROTOBUF_C_TYPE_MESSAGE
                    && opensMessage(reader, field.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self))
            }
            guard streamed else {
                // A scalar, null, a well-known type or a value of the wrong type: as a tree.
                let json = try reader.value(depth: depth + 1, path: memberPath)
                if case .null = json, !isValue(field) { return }
                if isOneof { try oneof(field, &oneofs, path: memberPath) }
                try fieldValue(field, json, always: always, path: memberPath, into: &out)
                return
            }
            if isOneof { try oneof(field, &oneofs, path: memberPath) }
            try streamField(field, &reader, depth: depth + 1, path: memberPath, into: &out)
        }
    }

    private static func oneof(_ field: ProtobufCFieldDescriptor, _ oneofs: inout [(UInt32, String)], path: () -> String) throws(ProtoJSONError) {
        let name = String(cString: field.name)
        if let other = oneofs.first(where: { $0.0 == field.quantifier_offset }) {
            throw ProtoJSONError(path(), "\(name) and \(other.1) are one oneof: give one")
        }
        oneofs.append((field.quantifier_offset, name))
    }

    /// A message field at an object, a map at an object or a repeated field at an array.
    private static func streamField(
        _ field: ProtobufCFieldDescriptor, _ reader: inout WebJSONReader, depth: Int, path: () -> String, into out: inout [UInt8]
    ) throws {
        if field.label != PROTOBUF_C_LABEL_REPEATED {
            var body: [UInt8] = []
            try streamMessage(field.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self), &reader, depth: depth, path: path, into: &body)
            ProtoWireOut.lengthDelimited(field.id, body, into: &out)
            return
        }
        if field.type == PROTOBUF_C_TYPE_MESSAGE, ProtoMessage.isMapEntry(field) {
            let entry = field.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self)
            let keyField = entry.pointee.fields[0], valueField = entry.pointee.fields[1]
            try streamObject(&reader, depth: depth, path: path) { key, reader, _ throws in
                func entryPath() -> String { "\(path())[\"\(key)\"]" }
                var body: [UInt8] = []
                try single(keyField, keyField.type == PROTOBUF_C_TYPE_STRING ? .string(key) : mapKey(key), always: true, path: entryPath, into: &body)
                if valueField.type == PROTOBUF_C_TYPE_MESSAGE,
                   opensMessage(reader, valueField.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self)) {
                    try streamField(valueField, &reader, depth: depth + 1, path: entryPath, into: &body)
                } else {
                    let json = try reader.value(depth: depth + 1, path: entryPath)
                    if case .null = json, !isValue(valueField) { throw ProtoJSONError(entryPath(), "a map value must not be null") }
                    try single(valueField, json, always: true, path: entryPath, into: &body)
                }
                ProtoWireOut.lengthDelimited(field.id, body, into: &out)
            }
            return
        }
        // An array (the caller saw its `[`).
        try reader.countValue()
        guard depth < reader.limits.maxDepth else { throw reader.error("nested deeper than \(reader.limits.maxDepth)", field: path) }
        reader.index += 1
        reader.skipWhitespace()
        if reader.index < reader.bytes.count, reader.bytes[reader.index] == UInt8(ascii: "]") {
            reader.index += 1
            return
        }
        let message = field.type == PROTOBUF_C_TYPE_MESSAGE ? field.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self) : nil
        var position = 0
        while true {
            reader.skipWhitespace()
            let index = position
            func itemPath() -> String { "\(path())[\(index)]" }
            if let message, opensMessage(reader, message) {
                var body: [UInt8] = []
                try streamMessage(message, &reader, depth: depth + 1, path: itemPath, into: &body)
                ProtoWireOut.lengthDelimited(field.id, body, into: &out)
            } else {
                let item = try reader.value(depth: depth + 1, path: itemPath)
                if case .null = item, message == nil { throw ProtoJSONError(itemPath(), "must not be null") }
                try single(field, item, always: true, path: itemPath, into: &out)
            }
            position += 1
            reader.skipWhitespace()
            guard reader.index < reader.bytes.count else { throw reader.error("truncated", field: path) }
            if reader.bytes[reader.index] == UInt8(ascii: ",") { reader.index += 1; continue }
            guard reader.bytes[reader.index] == UInt8(ascii: "]") else { throw reader.error("expected ',' or ']'", field: path) }
            reader.index += 1
            return
        }
    }

    /// Reads the object at the reader (its `{` seen) as ``WebJSONReader``
    /// does (the same bounds and errors), handing each member's name to
    /// `member` with the reader at its value, which `member` must read.
    private static func streamObject(
        _ reader: inout WebJSONReader, depth: Int, path: () -> String,
        member: (String, inout WebJSONReader, () -> String) throws -> Void
    ) throws {
        try reader.countValue()
        guard depth < reader.limits.maxDepth else { throw reader.error("nested deeper than \(reader.limits.maxDepth)", field: path) }
        reader.index += 1
        reader.skipWhitespace()
        if reader.index < reader.bytes.count, reader.bytes[reader.index] == UInt8(ascii: "}") {
            reader.index += 1
            return
        }
        var keys: [String] = []
        var keySet = Set<String>()
        while true {
            reader.skipWhitespace()
            guard reader.index < reader.bytes.count else { throw reader.error("truncated", field: path) }
            guard reader.bytes[reader.index] == UInt8(ascii: "\"") else { throw reader.error("expected a member name", field: path) }
            let key = try reader.string(field: path)
            func memberPath() -> String {
                let parent = path()
                return parent.isEmpty ? key : "\(parent).\(key)"
            }
            if keys.count < 16 {
                guard !keys.contains(key) else { throw reader.error("duplicate key \"\(key)\"", field: memberPath) }
                keys.append(key)
            } else {
                if keySet.isEmpty { keySet = Set(keys) }
                guard keySet.insert(key).inserted else { throw reader.error("duplicate key \"\(key)\"", field: memberPath) }
            }
            reader.skipWhitespace()
            guard reader.index < reader.bytes.count, reader.bytes[reader.index] == UInt8(ascii: ":") else {
                throw reader.error("expected ':'", field: memberPath)
            }
            reader.index += 1
            reader.skipWhitespace()
            // (`member` may not take a closure that captures `path` as it is.)
            try withoutActuallyEscaping(member) { member in try member(key, &reader, memberPath) }
            reader.skipWhitespace()
            guard reader.index < reader.bytes.count else { throw reader.error("truncated", field: path) }
            if reader.bytes[reader.index] == UInt8(ascii: ",") { reader.index += 1; continue }
            guard reader.bytes[reader.index] == UInt8(ascii: "}") else { throw reader.error("expected ',' or '}'", field: path) }
            reader.index += 1
            return
        }
    }

    /// Writes the fields of a `descriptor` message that `json` stands for.
    static func message(
        _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, _ json: WebJSON, path: () -> String, into out: inout [UInt8]
    ) throws(ProtoJSONError) {
        // The well-known JSON types, by name without making a string (this runs per message).
        let cName = descriptor.pointee.name!
        if strcmp(cName, "google.protobuf.Struct") == 0 {
            guard case .object(let members) = json else { throw ProtoJSONError(path(), "must be an object, got \(json.typeName)") }
            ProtoWireOut.structFields(members, into: &out)
            return
        }
        if strcmp(cName, "google.protobuf.Value") == 0 { ProtoWireOut.valueFields(json, into: &out); return }
        if strcmp(cName, "google.protobuf.ListValue") == 0 {
            guard case .array(let items) = json else { throw ProtoJSONError(path(), "must be an array, got \(json.typeName)") }
            ProtoWireOut.listFields(items, into: &out)
            return
        }
        if case .null = json { return }
        guard case .object(let members) = json else { throw ProtoJSONError(path(), "must be an object, got \(json.typeName)") }
        var seen: [UInt32] = []
        var oneofs: [(UInt32, String)] = []
        for member in members {
            // Paths are made only for an error message.
            func memberPath() -> String {
                let parent = path()
                return parent.isEmpty ? member.key : "\(parent).\(member.key)"
            }
            guard let field = Self.field(descriptor, member.key) else {
                throw ProtoJSONError(memberPath(), "unknown field \"\(member.key)\" of \(String(cString: cName))")
            }
            func name() -> String { String(cString: field.name) }
            guard !seen.contains(field.id) else { throw ProtoJSONError(memberPath(), "field \(name()) given twice") }
            seen.append(field.id)
            if case .null = member.value, !isValue(field) { continue }
            let isOneof = field.flags & UInt32(PROTOBUF_C_FIELD_FLAG_ONEOF.rawValue) != 0
            if isOneof {
                if let other = oneofs.first(where: { $0.0 == field.quantifier_offset }) {
                    throw ProtoJSONError(memberPath(), "\(name()) and \(other.1) are one oneof: give one")
                }
                oneofs.append((field.quantifier_offset, name()))
            }
            try fieldValue(field, member.value, always: isOneof || field.label != PROTOBUF_C_LABEL_NONE, path: memberPath, into: &out)
        }
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
            && strcmp(field.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self).pointee.name, "google.protobuf.Value") == 0
    }

    /// Writes `field` from `json`; a proto3 scalar at its default is left out
    /// unless `always` (oneof members, explicit presence, map entries), as
    /// protobuf-c's packer does.
    private static func fieldValue(
        _ field: ProtobufCFieldDescriptor, _ json: WebJSON, always: Bool, path: () -> String, into out: inout [UInt8]
    ) throws(ProtoJSONError) {
        guard field.label == PROTOBUF_C_LABEL_REPEATED else {
            try single(field, json, always: always, path: path, into: &out)
            return
        }
        if field.type == PROTOBUF_C_TYPE_MESSAGE, ProtoMessage.isMapEntry(field) {
            guard case .object(let members) = json else { throw ProtoJSONError(path(), "must be an object (a map), got \(json.typeName)") }
            let entry = field.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self)
            let keyField = entry.pointee.fields[0], valueField = entry.pointee.fields[1]
            for member in members {
                func entryPath() -> String { "\(path())[\"\(member.key)\"]" }
                var body: [UInt8] = []
                try single(keyField, keyField.type == PROTOBUF_C_TYPE_STRING ? .string(member.key) : mapKey(member.key),
                           always: true, path: entryPath, into: &body)
                guard !(member.value == .null && !isValue(valueField)) else { throw ProtoJSONError(entryPath(), "a map value must not be null") }
                try single(valueField, member.value, always: true, path: entryPath, into: &body)
                ProtoWireOut.lengthDelimited(field.id, body, into: &out)
            }
            return
        }
        guard case .array(let items) = json else { throw ProtoJSONError(path(), "must be an array, got \(json.typeName)") }
        for (index, item) in items.enumerated() {
            func itemPath() -> String { "\(path())[\(index)]" }
            if case .null = item, !(field.type == PROTOBUF_C_TYPE_MESSAGE) { throw ProtoJSONError(itemPath(), "must not be null") }
            try single(field, item, always: true, path: itemPath, into: &out)
        }
    }

    /// A map key written as a JSON member name, for a non-string key type.
    private static func mapKey(_ key: String) -> WebJSON {
        if key == "true" { return .bool(true) }
        if key == "false" { return .bool(false) }
        return .string(key)
    }

    /// Writes one value of `field` (an element, for a repeated one).
    private static func single(
        _ field: ProtobufCFieldDescriptor, _ json: WebJSON, always: Bool, path: () -> String, into out: inout [UInt8]
    ) throws(ProtoJSONError) {
        let id = field.id
        switch field.type {
        case PROTOBUF_C_TYPE_INT32, PROTOBUF_C_TYPE_SINT32, PROTOBUF_C_TYPE_SFIXED32:
            let number = try signed(json, path: path)
            guard Int32(exactly: number) != nil else { throw ProtoJSONError(path(), "\(number) is out of range for int32") }
            guard always || number != 0 else { return }
            switch field.type {
            case PROTOBUF_C_TYPE_SINT32: ProtoWireOut.varint(id, ProtoWireOut.zigzag(number), into: &out)
            case PROTOBUF_C_TYPE_SFIXED32: ProtoWireOut.fixed32(id, UInt32(bitPattern: Int32(number)), into: &out)
            default: ProtoWireOut.varint(id, UInt64(bitPattern: number), into: &out)
            }
        case PROTOBUF_C_TYPE_INT64, PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_SFIXED64:
            let number = try signed(json, path: path)
            guard always || number != 0 else { return }
            switch field.type {
            case PROTOBUF_C_TYPE_SINT64: ProtoWireOut.varint(id, ProtoWireOut.zigzag(number), into: &out)
            case PROTOBUF_C_TYPE_SFIXED64: ProtoWireOut.fixed64(id, UInt64(bitPattern: number), into: &out)
            default: ProtoWireOut.varint(id, UInt64(bitPattern: number), into: &out)
            }
        case PROTOBUF_C_TYPE_UINT32, PROTOBUF_C_TYPE_FIXED32:
            let number = try unsigned(json, path: path)
            guard UInt32(exactly: number) != nil else { throw ProtoJSONError(path(), "\(number) is out of range for uint32") }
            guard always || number != 0 else { return }
            if field.type == PROTOBUF_C_TYPE_FIXED32 {
                ProtoWireOut.fixed32(id, UInt32(number), into: &out)
            } else {
                ProtoWireOut.varint(id, number, into: &out)
            }
        case PROTOBUF_C_TYPE_UINT64, PROTOBUF_C_TYPE_FIXED64:
            let number = try unsigned(json, path: path)
            guard always || number != 0 else { return }
            if field.type == PROTOBUF_C_TYPE_FIXED64 {
                ProtoWireOut.fixed64(id, number, into: &out)
            } else {
                ProtoWireOut.varint(id, number, into: &out)
            }
        case PROTOBUF_C_TYPE_FLOAT, PROTOBUF_C_TYPE_DOUBLE:
            let number = try floating(json, path: path)
            if field.type == PROTOBUF_C_TYPE_FLOAT, number.isFinite, !Float(number).isFinite {
                throw ProtoJSONError(path(), "\(number) is out of range for float")
            }
            if field.type == PROTOBUF_C_TYPE_FLOAT {
                let narrow = Float(number)
                guard always || narrow.bitPattern != 0 else { return }
                ProtoWireOut.fixed32(id, narrow.bitPattern, into: &out)
            } else {
                guard always || number.bitPattern != 0 else { return }
                ProtoWireOut.fixed64(id, number.bitPattern, into: &out)
            }
        case PROTOBUF_C_TYPE_BOOL:
            guard case .bool(let flag) = json else { throw ProtoJSONError(path(), "must be true or false, got \(json.typeName)") }
            guard always || flag else { return }
            ProtoWireOut.varint(id, flag ? 1 : 0, into: &out)
        case PROTOBUF_C_TYPE_STRING:
            guard case .string(let text) = json else { throw ProtoJSONError(path(), "must be a string, got \(json.typeName)") }
            var copy = text
            let written: Bool = copy.withUTF8 { utf8 in
                guard !utf8.contains(0) else { return false }
                if always || !utf8.isEmpty { ProtoWireOut.lengthDelimited(id, utf8, into: &out) }
                return true
            }
            guard written else { throw ProtoJSONError(path(), "must not contain a NUL character") }
        case PROTOBUF_C_TYPE_BYTES:
            guard case .string(let text) = json else { throw ProtoJSONError(path(), "must be a base64 string, got \(json.typeName)") }
            guard let bytes = Base64.decodeURL(text) else { throw ProtoJSONError(path(), "is not valid base64") }
            guard always || !bytes.isEmpty else { return }
            ProtoWireOut.lengthDelimited(id, bytes, into: &out)
        case PROTOBUF_C_TYPE_ENUM:
            let descriptor = field.descriptor.assumingMemoryBound(to: ProtobufCEnumDescriptor.self)
            func enumName() -> String { String(cString: descriptor.pointee.name) }
            let number: Int32
            switch json {
            case .string(let name):
                guard let known = protobuf_c_enum_descriptor_get_value_by_name(descriptor, name) else {
                    throw ProtoJSONError(path(), "\"\(name)\" is not a value of \(enumName())")
                }
                number = known.pointee.value
            case .number(_, let integer?):
                guard let exact = Int32(exactly: integer), protobuf_c_enum_descriptor_get_value(descriptor, exact) != nil else {
                    throw ProtoJSONError(path(), "\(integer) is not a value of \(enumName())")
                }
                number = exact
            default:
                throw ProtoJSONError(path(), "must be a \(enumName()) name or number, got \(json.typeName)")
            }
            guard always || number != 0 else { return }
            ProtoWireOut.varint(id, UInt64(bitPattern: Int64(number)), into: &out)
        case PROTOBUF_C_TYPE_MESSAGE:
            var body: [UInt8] = []
            try message(field.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self), json, path: path, into: &body)
            ProtoWireOut.lengthDelimited(id, body, into: &out)
        default:
            throw ProtoJSONError(path(), "has a type the JSON mapping does not read")
        }
    }

    /// An integer written as a number (integral) or a decimal string.
    static func signed(_ json: WebJSON, path: () -> String) throws(ProtoJSONError) -> Int64 {
        switch json {
        case .number(_, let integer?): return integer
        case .number(let double, nil):
            guard double.rounded() == double, let exact = Int64(exactly: double) else {
                throw ProtoJSONError(path(), "\(double) is not an integer in range")
            }
            return exact
        case .string(let text):
            guard let number = Int64(text) else { throw ProtoJSONError(path(), "\"\(text.prefix(40))\" is not an integer in range") }
            return number
        default:
            throw ProtoJSONError(path(), "must be an integer, got \(json.typeName)")
        }
    }

    static func unsigned(_ json: WebJSON, path: () -> String) throws(ProtoJSONError) -> UInt64 {
        switch json {
        case .number(let double, let integer):
            if let integer, integer >= 0 { return UInt64(integer) }
            guard double.rounded() == double, let exact = UInt64(exactly: double) else {
                throw ProtoJSONError(path(), "\(integer.map { "\($0)" } ?? "\(double)") is not an unsigned integer in range")
            }
            return exact
        case .string(let text):
            guard let number = UInt64(text) else {
                throw ProtoJSONError(path(), "\"\(text.prefix(40))\" is not an unsigned integer in range")
            }
            return number
        default:
            throw ProtoJSONError(path(), "must be an unsigned integer, got \(json.typeName)")
        }
    }

    static func floating(_ json: WebJSON, path: () -> String) throws(ProtoJSONError) -> Double {
        switch json {
        case .number(let double, _): return double
        case .string("NaN"): return .nan
        case .string("Infinity"): return .infinity
        case .string("-Infinity"): return -.infinity
        case .string(let text):
            guard text.count <= 64, let double = Double(text), double.isFinite else {
                throw ProtoJSONError(path(), "\"\(text.prefix(40))\" is not a number")
            }
            return double
        default:
            throw ProtoJSONError(path(), "must be a number, got \(json.typeName)")
        }
    }
}
