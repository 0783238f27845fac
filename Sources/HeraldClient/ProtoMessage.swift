import CInterop
import HeraldPrimitives
import HeraldProtos
#if canImport(Glibc)
import Glibc
#endif

/// Request and reply messages through the protoc-c generated code
/// (Generated/): a request is filled into the generated C struct field by
/// field, by the names its descriptor gives, and packed with protobuf-c; a
/// reply is unpacked by protobuf-c and read back through the same
/// descriptors. No message layout is written out by hand here.
public enum ProtoMessage {
    /// A message type known to the client, by its descriptor.
    public struct MessageType: @unchecked Sendable {
        let descriptor: UnsafePointer<ProtobufCMessageDescriptor>

        /// The proto's full name, e.g. `herald.v1.ScheduleRequest`.
        public var fullName: String { String(cString: descriptor.pointee.name) }
    }

    /// Packs a message of `type` with `fields` set (proto names).
    ///
    /// - Throws: a local ``ClientFailure`` for a field the message does not
    ///   have, a value of the wrong kind, or an enum name it does not know.
    public static func pack(_ type: MessageType, _ fields: [(String, ProtoValue)]) throws(ClientFailure) -> [UInt8] {
        let memory = CMemory()
        let message = try memory.build(type.descriptor, fields)
        // The struct points into `memory`: keep it alive until packed.
        return withExtendedLifetime(memory) {
            let size = protobuf_c_message_get_packed_size(message)
            return [UInt8](unsafeUninitializedCapacity: max(size, 1)) { buffer, count in
                count = protobuf_c_message_pack(message, buffer.baseAddress!)
            }
        }
    }

    /// Unpacks `bytes` as a `type` and reads every field.
    ///
    /// - Throws: INTERNAL when the bytes are not a `type`.
    /// - Parameter defaults: false leaves out singular fields at their
    ///   default and empty repeated fields (proto3 JSON's default output);
    ///   true (the CLI's) keeps them so a script can index them.
    public static func read(_ type: MessageType, _ bytes: [UInt8], defaults: Bool = true) throws(ClientFailure) -> ProtoNode {
        var empty: UInt8 = 0
        let parsed: UnsafeMutablePointer<ProtobufCMessage>? = bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress, !buffer.isEmpty else {
                return protobuf_c_message_unpack(type.descriptor, nil, 0, &empty)
            }
            return protobuf_c_message_unpack(type.descriptor, nil, buffer.count, base)
        }
        guard let parsed else {
            throw ClientFailure(.internalError, "the server's reply is not a valid \(type.fullName) (\(bytes.count) bytes)")
        }
        defer { protobuf_c_message_free_unpacked(parsed, nil) }
        return node(of: UnsafeRawPointer(parsed), type.descriptor, defaults: defaults)
    }

    /// The full name of an enum value, e.g. `MESSAGE_STATE_SENT`, from a
    /// short one (`sent`, any case), for the enum `enumPrefix` (`MESSAGE_STATE_`).
    public static func enumName(_ short: String, prefix enumPrefix: String) -> String {
        let upper = short.uppercased().replacingHyphens()
        return upper.hasPrefix(enumPrefix) ? upper : enumPrefix + upper
    }

    // MARK: Reading

    private static func node(
        of message: UnsafeRawPointer, _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, defaults: Bool = true
    ) -> ProtoNode {
        let name = String(cString: descriptor.pointee.name)
        if name.hasPrefix("google.protobuf."), let json = wellKnownJSON(message, descriptor, name) { return .json(json) }
        var fields: [ProtoField] = []
        for index in 0..<Int(descriptor.pointee.n_fields) {
            let field = descriptor.pointee.fields[index]
            let fieldName = String(cString: field.name)
            let at = message + Int(field.offset)
            if field.label == PROTOBUF_C_LABEL_REPEATED {
                let count = message.load(fromByteOffset: Int(field.quantifier_offset), as: Int.self)
                guard let array = at.load(as: UnsafeRawPointer?.self), count > 0 else {
                    if defaults { fields.append(ProtoField(fieldName, .list([]))) }
                    continue
                }
                let elements = (0..<count).map { element(array + $0 * elementSize(field), field, defaults: defaults) }
                if field.type == PROTOBUF_C_TYPE_MESSAGE, isMapEntry(field) {
                    fields.append(ProtoField(fieldName, .map(elements.map { entry in
                        ProtoField(entry["key"]?.text ?? "", entry["value"] ?? .scalar(json: .null, text: ""))
                    })))
                } else {
                    fields.append(ProtoField(fieldName, .list(elements)))
                }
                continue
            }
            if field.flags & UInt32(PROTOBUF_C_FIELD_FLAG_ONEOF.rawValue) != 0 {
                let selected = message.load(fromByteOffset: Int(field.quantifier_offset), as: UInt32.self)
                guard selected == field.id else { continue }
            } else if field.label == PROTOBUF_C_LABEL_OPTIONAL, field.type != PROTOBUF_C_TYPE_MESSAGE,
                      field.type != PROTOBUF_C_TYPE_STRING {
                guard message.load(fromByteOffset: Int(field.quantifier_offset), as: Int32.self) != 0 else { continue }
            } else if !defaults, isDefault(at, field) {
                continue
            }
            if field.type == PROTOBUF_C_TYPE_MESSAGE {
                guard let sub = at.load(as: UnsafeRawPointer?.self) else { continue }
                fields.append(ProtoField(fieldName, node(
                    of: sub, field.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self), defaults: defaults)))
            } else {
                fields.append(ProtoField(fieldName, element(at, field, defaults: defaults)))
            }
        }
        return .message(fields)
    }

    static func isMapEntry(_ field: ProtobufCFieldDescriptor) -> Bool {
        let sub = field.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self)
        guard sub.pointee.n_fields == 2 else { return false }
        return String(cString: sub.pointee.fields[0].name) == "key" && String(cString: sub.pointee.fields[1].name) == "value"
            && String(cString: sub.pointee.short_name).hasSuffix("Entry")
    }

    /// A singular field holding its default (proto3 JSON leaves it out):
    /// zero, false, the first enum value, an empty string or bytes.
    private static func isDefault(_ at: UnsafeRawPointer, _ field: ProtobufCFieldDescriptor) -> Bool {
        switch field.type {
        case PROTOBUF_C_TYPE_STRING:
            guard let text = at.load(as: UnsafePointer<CChar>?.self) else { return true }
            return text.pointee == 0
        case PROTOBUF_C_TYPE_BYTES: return at.load(as: ProtobufCBinaryData.self).len == 0
        case PROTOBUF_C_TYPE_MESSAGE: return false
        default:
            let size = elementSize(field)
            return (0..<size).allSatisfy { at.load(fromByteOffset: $0, as: UInt8.self) == 0 }
        }
    }

    private static func elementSize(_ field: ProtobufCFieldDescriptor) -> Int {
        switch field.type {
        case PROTOBUF_C_TYPE_INT64, PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_SFIXED64, PROTOBUF_C_TYPE_UINT64,
             PROTOBUF_C_TYPE_FIXED64, PROTOBUF_C_TYPE_DOUBLE: 8
        case PROTOBUF_C_TYPE_STRING, PROTOBUF_C_TYPE_MESSAGE: MemoryLayout<UnsafeRawPointer>.stride
        case PROTOBUF_C_TYPE_BYTES: MemoryLayout<ProtobufCBinaryData>.stride
        default: 4
        }
    }

    /// One value of `field` stored at `at` (for a message: a pointer to it).
    private static func element(_ at: UnsafeRawPointer, _ field: ProtobufCFieldDescriptor, defaults: Bool = true) -> ProtoNode {
        switch field.type {
        case PROTOBUF_C_TYPE_INT32, PROTOBUF_C_TYPE_SINT32, PROTOBUF_C_TYPE_SFIXED32:
            let value = at.load(as: Int32.self)
            return .scalar(json: .number(Double(value)), text: "\(value)")
        case PROTOBUF_C_TYPE_UINT32, PROTOBUF_C_TYPE_FIXED32:
            let value = at.load(as: UInt32.self)
            return .scalar(json: .number(Double(value)), text: "\(value)")
        case PROTOBUF_C_TYPE_INT64, PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_SFIXED64:
            let value = at.loadUnaligned(as: Int64.self)
            return .scalar(json: .string("\(value)"), text: "\(value)")  // proto3 JSON: 64-bit integers are strings
        case PROTOBUF_C_TYPE_UINT64, PROTOBUF_C_TYPE_FIXED64:
            let value = at.loadUnaligned(as: UInt64.self)
            return .scalar(json: .string("\(value)"), text: "\(value)")
        case PROTOBUF_C_TYPE_FLOAT:
            let value = Double(at.load(as: Float.self))
            return .scalar(json: value.isFinite ? .number(value) : .string(nonFinite(value)), text: "\(value)")
        case PROTOBUF_C_TYPE_DOUBLE:
            let value = at.loadUnaligned(as: Double.self)
            return .scalar(json: value.isFinite ? .number(value) : .string(nonFinite(value)), text: "\(value)")
        case PROTOBUF_C_TYPE_BOOL:
            let value = at.load(as: Int32.self) != 0
            return .scalar(json: .bool(value), text: value ? "true" : "false")
        case PROTOBUF_C_TYPE_ENUM:
            let value = at.load(as: Int32.self)
            let descriptor = field.descriptor.assumingMemoryBound(to: ProtobufCEnumDescriptor.self)
            guard let known = protobuf_c_enum_descriptor_get_value(descriptor, value) else {
                return .scalar(json: .number(Double(value)), text: "\(value)")
            }
            let full = String(cString: known.pointee.name)
            let prefix = enumPrefix(String(cString: descriptor.pointee.short_name))
            let short = full.hasPrefix(prefix) ? String(full.dropFirst(prefix.count)).lowercased() : full
            return .scalar(json: .string(full), text: short)
        case PROTOBUF_C_TYPE_STRING:
            let text = at.load(as: UnsafePointer<CChar>?.self).map { String(cString: $0) } ?? ""
            return .scalar(json: .string(text), text: text)
        case PROTOBUF_C_TYPE_BYTES:
            let data = at.load(as: ProtobufCBinaryData.self)
            let bytes = data.data.map { Array(UnsafeBufferPointer(start: $0, count: data.len)) } ?? []
            let text = Base64.encode(bytes)
            return .scalar(json: .string(text), text: text)
        case PROTOBUF_C_TYPE_MESSAGE:
            guard let sub = at.load(as: UnsafeRawPointer?.self) else { return .message([]) }
            return node(of: sub, field.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self), defaults: defaults)
        default:
            return .scalar(json: .null, text: "")
        }
    }

    /// NaN and the infinities as proto3 JSON spells them.
    private static func nonFinite(_ value: Double) -> String {
        value.isNaN ? "NaN" : value > 0 ? "Infinity" : "-Infinity"
    }

    /// `MessageState` → `MESSAGE_STATE_`: the prefix of the enum's value names.
    static func enumPrefix(_ shortName: String) -> String {
        var out = ""
        for (index, character) in shortName.enumerated() {
            if character.isUppercase, index > 0 { out.append("_") }
            out.append(contentsOf: character.uppercased())
        }
        return out + "_"
    }

    /// google.protobuf.Struct, Value and ListValue as the JSON they stand for.
    private static func wellKnownJSON(
        _ message: UnsafeRawPointer, _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, _ name: String
    ) -> JSONValue? {
        guard name == "google.protobuf.Struct" || name == "google.protobuf.Value" || name == "google.protobuf.ListValue" else {
            return nil
        }
        return json(node(ofPlain: message, descriptor), wellKnown: name)
    }

    /// The message read without the well-known shortcut (its own fields).
    private static func node(ofPlain message: UnsafeRawPointer, _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>) -> ProtoNode {
        var fields: [ProtoField] = []
        for index in 0..<Int(descriptor.pointee.n_fields) {
            let field = descriptor.pointee.fields[index]
            let at = message + Int(field.offset)
            let fieldName = String(cString: field.name)
            if field.label == PROTOBUF_C_LABEL_REPEATED {
                let count = message.load(fromByteOffset: Int(field.quantifier_offset), as: Int.self)
                guard let array = at.load(as: UnsafeRawPointer?.self) else { continue }
                fields.append(ProtoField(fieldName, .list((0..<count).map { element(array + $0 * elementSize(field), field) })))
            } else if field.flags & UInt32(PROTOBUF_C_FIELD_FLAG_ONEOF.rawValue) != 0 {
                guard message.load(fromByteOffset: Int(field.quantifier_offset), as: UInt32.self) == field.id else { continue }
                fields.append(ProtoField(fieldName, element(at, field)))
            }
        }
        return .message(fields)
    }

    private static func json(_ node: ProtoNode, wellKnown name: String) -> JSONValue {
        switch name {
        case "google.protobuf.Struct":
            guard case .list(let entries)? = node["fields"] else { return .object(JSONObject()) }
            var pairs: [(key: String, value: JSONValue)] = []
            for entry in entries {
                if case .json(let value)? = entry["value"] { pairs.append((entry["key"]?.text ?? "", value)) }
            }
            return .object(JSONObject(pairs))
        case "google.protobuf.ListValue":
            guard case .list(let values)? = node["values"] else { return .array([]) }
            return .array(values.map { if case .json(let value) = $0 { value } else { .null } })
        default:  // Value
            guard case .message(let fields) = node, let kind = fields.first else { return .null }
            switch kind.node {
            case .json(let value): return value
            case .scalar(let value, _):
                if kind.name == "null_value" { return .null }
                return value
            default: return .null
            }
        }
    }
}

extension String {
    func replacingHyphens() -> String { String(map { $0 == "-" ? "_" : $0 }) }
}
