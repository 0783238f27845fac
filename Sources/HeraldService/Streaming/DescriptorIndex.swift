import HeraldProtos

/// The file descriptors of `Protos/` (the FileDescriptorSet that
/// `scripts/gen-protos.sh` embeds in the binary), indexed by file name and by
/// every fully-qualified symbol they declare, for server reflection.
///
/// The descriptors are read with a small wire reader rather than protoc-c
/// structs: `descriptor.proto` is proto2 and not among `Protos/`, and
/// reflection hands the files out as opaque bytes anyway.
struct DescriptorIndex: Sendable {
    struct File: Sendable, Equatable {
        var name: String
        /// The serialized `FileDescriptorProto`, as reflection sends it.
        var bytes: [UInt8]
        var dependencies: [String]
    }

    /// A descriptor set that does not parse.
    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    private(set) var files: [String: File] = [:]
    /// Fully-qualified symbol (package, messages, nested messages, fields,
    /// oneofs, enums, enum values, services, methods, extensions) → the file
    /// that declares it.
    private(set) var symbols: [String: String] = [:]
    /// Fully-qualified names of the message types.
    private(set) var messageTypes: Set<String> = []
    /// Fully-qualified names of the services, in descriptor-set order.
    private(set) var services: [String] = []

    /// The set compiled into the binary.
    static let embedded: DescriptorIndex = {
        var count = 0
        let base = herald_descriptor_set(&count)!
        let bytes = [UInt8](UnsafeBufferPointer(start: base, count: count))
        // The set is generated and drift-checked; a failure here is a broken
        // build, not an input error.
        do { return try DescriptorIndex(descriptorSet: bytes) } catch { fatalError("embedded descriptor set: \(error)") }
    }()

    /// Indexes a serialized `google.protobuf.FileDescriptorSet`.
    init(descriptorSet: [UInt8]) throws {
        for field in try WireFields.parse(descriptorSet[...]) where field.number == 1 {
            try addFile(field.bytes())
        }
    }

    /// The file called `name` and, after it, every file it imports directly or
    /// transitively, each once: what a reflection client needs to build the
    /// file (grpcurl resolves imports only from what it was sent).
    func closure(of name: String) -> [File] {
        var result: [File] = []
        var seen: Set<String> = []
        var pending = [name]
        while let next = pending.first {
            pending.removeFirst()
            guard seen.insert(next).inserted, let file = files[next] else { continue }
            result.append(file)
            pending.append(contentsOf: file.dependencies)
        }
        return result
    }

    // MARK: - Indexing (field numbers from google/protobuf/descriptor.proto)

    private mutating func addFile(_ bytes: ArraySlice<UInt8>) throws {
        let fields = try WireFields.parse(bytes)
        guard let name = try fields.first(where: { $0.number == 1 })?.string() else {
            throw Malformed(description: "a FileDescriptorProto without a name")
        }
        let package = try fields.first(where: { $0.number == 2 })?.string() ?? ""
        let scope = package.isEmpty ? "" : package + "."
        if !package.isEmpty { declare(package, in: name) }
        var dependencies: [String] = []
        for field in fields {
            switch field.number {
            case 3: dependencies.append(try field.string())
            case 4: try addMessage(field.bytes(), scope: scope, file: name)
            case 5: try addEnum(field.bytes(), scope: scope, file: name)
            case 6: try addService(field.bytes(), scope: scope, file: name)
            case 7: try addNamed(field.bytes(), scope: scope, file: name)
            default: break
            }
        }
        files[name] = File(name: name, bytes: Array(bytes), dependencies: dependencies)
    }

    private mutating func addMessage(_ bytes: ArraySlice<UInt8>, scope: String, file: String) throws {
        let fields = try WireFields.parse(bytes)
        let full = scope + (try Self.name(fields))
        declare(full, in: file)
        messageTypes.insert(full)
        for field in fields {
            switch field.number {
            case 2, 6, 8: try addNamed(field.bytes(), scope: full + ".", file: file)  // field, extension, oneof
            case 3: try addMessage(field.bytes(), scope: full + ".", file: file)
            case 4: try addEnum(field.bytes(), scope: full + ".", file: file)
            default: break
            }
        }
    }

    private mutating func addEnum(_ bytes: ArraySlice<UInt8>, scope: String, file: String) throws {
        let fields = try WireFields.parse(bytes)
        declare(scope + (try Self.name(fields)), in: file)
        // Enum values are scoped beside their enum, as in C++ (protobuf's
        // DescriptorPool), not inside it.
        for field in fields where field.number == 2 {
            try addNamed(field.bytes(), scope: scope, file: file)
        }
    }

    private mutating func addService(_ bytes: ArraySlice<UInt8>, scope: String, file: String) throws {
        let fields = try WireFields.parse(bytes)
        let full = scope + (try Self.name(fields))
        declare(full, in: file)
        services.append(full)
        for field in fields where field.number == 2 {
            try addNamed(field.bytes(), scope: full + ".", file: file)
        }
    }

    /// A declaration with nothing inside that is a symbol of its own.
    private mutating func addNamed(_ bytes: ArraySlice<UInt8>, scope: String, file: String) throws {
        declare(scope + (try Self.name(WireFields.parse(bytes))), in: file)
    }

    private mutating func declare(_ symbol: String, in file: String) {
        // A package spans files: the first file that declares it answers.
        if symbols[symbol] == nil { symbols[symbol] = file }
    }

    private static func name(_ fields: [WireFields.Field]) throws -> String {
        guard let name = try fields.first(where: { $0.number == 1 })?.string() else {
            throw Malformed(description: "a declaration without a name")
        }
        return name
    }
}

/// The top-level fields of one protobuf message, without a schema.
enum WireFields {
    struct Field {
        var number: Int
        /// The payload of a length-delimited field; empty for the others.
        var payload: ArraySlice<UInt8>
        var lengthDelimited: Bool

        func bytes() throws -> ArraySlice<UInt8> {
            guard lengthDelimited else { throw DescriptorIndex.Malformed(description: "field \(number) is not length-delimited") }
            return payload
        }

        func string() throws -> String {
            guard let text = String(validating: try bytes(), as: UTF8.self) else {
                throw DescriptorIndex.Malformed(description: "field \(number) is not UTF-8")
            }
            return text
        }
    }

    static func parse(_ bytes: ArraySlice<UInt8>) throws -> [Field] {
        var fields: [Field] = []
        var index = bytes.startIndex
        func varint() throws -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while index < bytes.endIndex, shift < 64 {
                let byte = bytes[index]
                index += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
            throw DescriptorIndex.Malformed(description: "a truncated varint")
        }
        func skip(_ count: UInt64) throws {
            guard count <= UInt64(bytes.endIndex - index) else { throw DescriptorIndex.Malformed(description: "a truncated field") }
            index += Int(count)
        }
        while index < bytes.endIndex {
            let key = try varint()
            let number = Int(key >> 3)
            switch key & 7 {
            case 0: _ = try varint(); fields.append(Field(number: number, payload: [], lengthDelimited: false))
            case 1: try skip(8); fields.append(Field(number: number, payload: [], lengthDelimited: false))
            case 5: try skip(4); fields.append(Field(number: number, payload: [], lengthDelimited: false))
            case 2:
                let length = try varint()
                let start = index
                try skip(length)
                fields.append(Field(number: number, payload: bytes[start..<index], lengthDelimited: true))
            default: throw DescriptorIndex.Malformed(description: "wire type \(key & 7) (groups are not used in Protos/)")
            }
        }
        return fields
    }
}
