import CInterop
import GRPCEngine

/// Packs and unpacks protoc-c messages.
enum ProtobufC {
    /// Serializes `message` (and everything it points to).
    static func pack<M: GeneratedMessage>(_ message: inout M) -> [UInt8] {
        withUnsafeMutablePointer(to: &message) { pointer in
            let base = UnsafeMutableRawPointer(pointer).assumingMemoryBound(to: ProtobufCMessage.self)
            let size = protobuf_c_message_get_packed_size(base)
            return [UInt8](unsafeUninitializedCapacity: max(size, 1)) { buffer, count in
                count = protobuf_c_message_pack(base, buffer.baseAddress!)
            }
        }
    }

    /// Parses `bytes` as an `M`, hands the parsed struct to `body`, and frees
    /// it afterwards: `body` must copy out what it needs.
    ///
    /// The bytes are walked first (``WireWalk``): too deep a nesting and a
    /// NUL byte in any string are refused by name, and repeated embedded
    /// messages are merged (``WireRewrite``) before protobuf-c sees them.
    ///
    /// - Throws: `INVALID_ARGUMENT` naming the message type when the bytes do
    ///   not parse, or the field that holds a NUL byte.
    static func withUnpacked<M: GeneratedMessage, R>(
        _ type: M.Type, from bytes: [UInt8], _ body: (borrowing M) throws -> R
    ) throws -> R {
        let parsed = try parse(M.self, bytes, allocator: nil)
        defer { protobuf_c_message_free_unpacked(parsed, nil) }
        return try body(UnsafeMutableRawPointer(parsed).assumingMemoryBound(to: M.self).pointee)
    }

    /// Walks `bytes` (``WireWalk``), rewrites them when needed and unpacks
    /// them with `allocator` (nil: malloc).
    static func parse<M: GeneratedMessage>(
        _ type: M.Type, _ bytes: [UInt8], allocator: UnsafeMutablePointer<ProtobufCAllocator>?
    ) throws -> UnsafeMutablePointer<ProtobufCMessage> {
        let descriptor = M.descriptor
        let parsed = try bytes.withUnsafeBytes { buffer -> UnsafeMutablePointer<ProtobufCMessage>? in
            let walk = WireWalk(buffer, descriptor: descriptor)
            if let problem = walk.problem {
                throw GRPCStatus(.invalidArgument, WireWalk.violation(problem, message: M.fullName).description)
            }
            if walk.repeatedMessages && !walk.malformed {
                let merged = WireRewrite.rewrite(buffer, descriptor: descriptor)
                return merged.withUnsafeBytes { unpack(descriptor, $0, allocator) }
            }
            return unpack(descriptor, buffer, allocator)
        }
        guard let parsed else {
            throw GRPCStatus(.invalidArgument, "request is not a valid \(M.fullName) message (\(bytes.count) bytes)")
        }
        return parsed
    }

    private static func unpack(
        _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, _ buffer: UnsafeRawBufferPointer,
        _ allocator: UnsafeMutablePointer<ProtobufCAllocator>?
    ) -> UnsafeMutablePointer<ProtobufCMessage>? {
        // protobuf-c wants a valid pointer even for the empty message.
        var empty: UInt8 = 0
        return buffer.baseAddress.map {
            protobuf_c_message_unpack(descriptor, allocator, buffer.count, $0.assumingMemoryBound(to: UInt8.self))
        } ?? protobuf_c_message_unpack(descriptor, allocator, 0, &empty)
    }

    /// The numbers of `M`'s top-level fields named `fields` (unknown names
    /// are left out), for ``cleaned(_:_:droppingNumbers:)``.
    static func fieldNumbers<M: GeneratedMessage>(_ type: M.Type, _ fields: Set<String>) -> Set<UInt32> {
        Set(fields.compactMap { name in
            protobuf_c_message_descriptor_get_field_by_name(M.descriptor, name).map { $0.pointee.id }
        })
    }

    /// `bytes` (a valid `M`) without unknown fields and without the top-level
    /// fields numbered `numbers`, repeated embedded messages merged: what may
    /// be stored. The bytes themselves when there is nothing to remove.
    static func cleaned<M: GeneratedMessage>(_ type: M.Type, _ bytes: [UInt8], droppingNumbers numbers: Set<UInt32>) -> [UInt8] {
        let descriptor = M.descriptor
        return bytes.withUnsafeBytes { buffer in
            let walk = WireWalk(buffer, descriptor: descriptor)
            guard !walk.malformed else { return bytes }
            let dropsField = WireWalk.hasTopLevelField(buffer, numbers: numbers)
            guard walk.unknownFields || walk.repeatedMessages || dropsField else { return bytes }
            return WireRewrite.rewrite(buffer, descriptor: descriptor, dropUnknown: true, dropTopLevel: numbers)
        }
    }
}

/// Owns the C memory a response message points to (strings, sub-messages,
/// pointer arrays) until it has been packed; everything is freed on deinit.
final class CArena {
    private var allocations: [UnsafeMutableRawPointer] = []

    deinit {
        for allocation in allocations { free(allocation) }
    }

    /// A NUL-terminated copy of `string`.
    func string(_ string: String) -> UnsafeMutablePointer<CChar> {
        let copy = strdup(string)!
        allocations.append(copy)
        return copy
    }

    /// A heap copy of an initialized message, customized by `build`.
    func message<M: GeneratedMessage>(_ type: M.Type = M.self, _ build: (inout M) -> Void) -> UnsafeMutablePointer<M> {
        let raw = malloc(MemoryLayout<M>.stride)!
        allocations.append(raw)
        let pointer = raw.bindMemory(to: M.self, capacity: 1)
        var value = M.initialized()
        build(&value)
        pointer.initialize(to: value)
        return pointer
    }

    /// A C array of pointers, as protoc-c represents `repeated` messages.
    func pointerArray<T>(_ elements: [UnsafeMutablePointer<T>]) -> UnsafeMutablePointer<UnsafeMutablePointer<T>?>? {
        guard !elements.isEmpty else { return nil }
        let raw = malloc(MemoryLayout<UnsafeMutablePointer<T>?>.stride * elements.count)!
        allocations.append(raw)
        let array = raw.bindMemory(to: UnsafeMutablePointer<T>?.self, capacity: elements.count)
        for (index, element) in elements.enumerated() { array[index] = element }
        return array
    }
}
