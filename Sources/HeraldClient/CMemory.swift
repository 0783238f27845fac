import CInterop
#if canImport(Glibc)
import Glibc
#endif

/// Builds protoc-c message structs for packing: every block it allocates
/// (structs, strings, arrays) is freed when it goes.
final class CMemory {
    private var blocks: [UnsafeMutableRawPointer] = []

    deinit {
        for block in blocks { free(block) }
    }

    /// `count` zeroed bytes (at least 1).
    private func allocate(_ count: Int) -> UnsafeMutableRawPointer {
        guard let block = calloc(1, max(count, 1)) else { fatalError("out of memory (\(count) bytes)") }
        blocks.append(block)
        return block
    }

    /// A message of `descriptor`, initialized by its generated init and
    /// filled with `fields`.
    func build(
        _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, _ fields: [(String, ProtoValue)]
    ) throws(ClientFailure) -> UnsafeMutablePointer<ProtobufCMessage> {
        let raw = allocate(descriptor.pointee.sizeof_message)
        let message = raw.assumingMemoryBound(to: ProtobufCMessage.self)
        descriptor.pointee.message_init(message)
        func typeName() -> String { String(cString: descriptor.pointee.name) }
        for (name, value) in fields {
            guard let field = protobuf_c_message_descriptor_get_field_by_name(descriptor, name)?.pointee else {
                throw .local("\(typeName()) has no field \(name)")
            }
            let at = raw + Int(field.offset)
            if field.label == PROTOBUF_C_LABEL_REPEATED {
                guard case .list(let elements) = value else { throw .local("\(typeName()).\(name) is repeated: give a list") }
                guard !elements.isEmpty else { continue }
                let size = Self.elementSize(field)
                let array = allocate(size * elements.count)
                for (index, element) in elements.enumerated() {
                    try store(element, at: array + index * size, field, typeName)
                }
                raw.storeBytes(of: elements.count, toByteOffset: Int(field.quantifier_offset), as: Int.self)
                at.storeBytes(of: UnsafeMutableRawPointer?(array), as: UnsafeMutableRawPointer?.self)
                continue
            }
            try store(value, at: at, field, typeName)
            if field.flags & UInt32(PROTOBUF_C_FIELD_FLAG_ONEOF.rawValue) != 0 {
                raw.storeBytes(of: field.id, toByteOffset: Int(field.quantifier_offset), as: UInt32.self)
            } else if field.label == PROTOBUF_C_LABEL_OPTIONAL, field.type != PROTOBUF_C_TYPE_MESSAGE,
                      field.type != PROTOBUF_C_TYPE_STRING {
                raw.storeBytes(of: Int32(1), toByteOffset: Int(field.quantifier_offset), as: Int32.self)
            }
        }
        return message
    }

    static func elementSize(_ field: ProtobufCFieldDescriptor) -> Int {
        switch field.type {
        case PROTOBUF_C_TYPE_INT64, PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_SFIXED64, PROTOBUF_C_TYPE_UINT64,
             PROTOBUF_C_TYPE_FIXED64, PROTOBUF_C_TYPE_DOUBLE: 8
        case PROTOBUF_C_TYPE_STRING, PROTOBUF_C_TYPE_MESSAGE: MemoryLayout<UnsafeRawPointer>.stride
        case PROTOBUF_C_TYPE_BYTES: MemoryLayout<ProtobufCBinaryData>.stride
        default: 4
        }
    }

    /// Stores one value of `field` at `at`.
    private func store(_ value: ProtoValue, at: UnsafeMutableRawPointer, _ field: ProtobufCFieldDescriptor, _ typeName: () -> String) throws(ClientFailure) {
        // Made only for an error message (this runs per field).
        func name() -> String { "\(typeName()).\(String(cString: field.name))" }
        switch (field.type, value) {
        case (PROTOBUF_C_TYPE_STRING, .string(let text)):
            var text = text
            let copy: UnsafeMutableRawPointer? = text.withUTF8 { utf8 in
                guard !utf8.contains(0) else { return nil }
                let copy = allocate(utf8.count + 1)  // zeroed: the terminator
                if let base = utf8.baseAddress { copy.copyMemory(from: base, byteCount: utf8.count) }
                return copy
            }
            guard let copy else { throw .local("\(name()) must not contain a NUL character") }
            at.storeBytes(of: UnsafeMutableRawPointer?(copy), as: UnsafeMutableRawPointer?.self)
        case (PROTOBUF_C_TYPE_BOOL, .bool(let flag)):
            at.storeBytes(of: Int32(flag ? 1 : 0), as: Int32.self)
        case (PROTOBUF_C_TYPE_INT32, .int(let number)), (PROTOBUF_C_TYPE_SINT32, .int(let number)),
             (PROTOBUF_C_TYPE_SFIXED32, .int(let number)):
            guard let narrow = Int32(exactly: number) else { throw .local("\(name()) is out of range: \(number)") }
            at.storeBytes(of: narrow, as: Int32.self)
        case (PROTOBUF_C_TYPE_UINT32, .uint(let number)), (PROTOBUF_C_TYPE_FIXED32, .uint(let number)):
            guard let narrow = UInt32(exactly: number) else { throw .local("\(name()) is out of range: \(number)") }
            at.storeBytes(of: narrow, as: UInt32.self)
        case (PROTOBUF_C_TYPE_INT64, .int(let number)), (PROTOBUF_C_TYPE_SINT64, .int(let number)),
             (PROTOBUF_C_TYPE_SFIXED64, .int(let number)):
            at.storeBytes(of: number, as: Int64.self)
        case (PROTOBUF_C_TYPE_UINT64, .uint(let number)), (PROTOBUF_C_TYPE_FIXED64, .uint(let number)):
            at.storeBytes(of: number, as: UInt64.self)
        case (PROTOBUF_C_TYPE_DOUBLE, .double(let number)):
            at.storeBytes(of: number, as: Double.self)
        case (PROTOBUF_C_TYPE_FLOAT, .double(let number)):
            at.storeBytes(of: Float(number), as: Float.self)
        case (PROTOBUF_C_TYPE_BYTES, .bytes(let bytes)):
            let copy = allocate(bytes.count)
            copy.copyMemory(from: bytes, byteCount: bytes.count)
            at.storeBytes(of: ProtobufCBinaryData(len: bytes.count, data: copy.assumingMemoryBound(to: UInt8.self)), as: ProtobufCBinaryData.self)
        case (PROTOBUF_C_TYPE_ENUM, .enumName(let valueName)):
            let descriptor = field.descriptor.assumingMemoryBound(to: ProtobufCEnumDescriptor.self)
            guard let known = protobuf_c_enum_descriptor_get_value_by_name(descriptor, valueName) else {
                throw .local("\(name()): unknown value \(valueName)")
            }
            at.storeBytes(of: known.pointee.value, as: Int32.self)
        case (PROTOBUF_C_TYPE_MESSAGE, .message(let fields)):
            let sub = try build(field.descriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self), fields)
            at.storeBytes(of: UnsafeMutableRawPointer?(UnsafeMutableRawPointer(sub)), as: UnsafeMutableRawPointer?.self)
        default:
            throw .local("\(name()): a value of the wrong kind (\(value))")
        }
    }
}
