import CInterop

/// Checks how deeply a serialized message nests before protobuf-c parses it.
///
/// protobuf-c's parser recurses once per nested message with no limit of its
/// own, so a 4 MiB `google.protobuf.Struct` nested a million levels deep
/// would overflow the event loop's stack. This walk is driven by the
/// generated descriptors (only message-typed fields nest), is bounded by
/// `limit`, and costs one pass over the bytes.
enum NestingLimit {
    /// protobuf's own default recursion limit.
    static let defaultLimit = 100

    /// Messages smaller than this are not walked: every nesting level costs
    /// at least 2 bytes (a key and a length), so they nest at most ~500
    /// levels, which no stack in the process notices (the danger is a
    /// megabyte message nesting hundreds of thousands deep). The walk is a
    /// second pass over every large message, so it is skipped where it cannot
    /// matter.
    static let minimumBytesToWalk = 1024

    /// True when no message inside `bytes` nests deeper than `limit` (always
    /// true below `minimumBytesToWalk`).
    /// Malformed bytes pass: the parser rejects them with its own error.
    static func check(
        _ bytes: UnsafeRawBufferPointer,
        descriptor: UnsafePointer<ProtobufCMessageDescriptor>,
        limit: Int = defaultLimit
    ) -> Bool {
        if bytes.count < minimumBytesToWalk { return true }
        var reader = WireReader(bytes: bytes)
        return walk(&reader, end: bytes.count, descriptor: descriptor, depthLeft: limit)
    }

    private static func walk(
        _ reader: inout WireReader, end: Int,
        descriptor: UnsafePointer<ProtobufCMessageDescriptor>, depthLeft: Int
    ) -> Bool {
        while reader.offset < end {
            guard let key = reader.varint() else { return true }
            let wireType = Int(key & 7)
            let fieldNumber = UInt32(truncatingIfNeeded: key >> 3)
            switch wireType {
            case 0: guard reader.varint() != nil else { return true }
            case 1: reader.offset += 8
            case 5: reader.offset += 4
            case 2:
                guard let length = reader.varint(), length <= UInt64(end - reader.offset) else { return true }
                let bodyEnd = reader.offset + Int(length)
                if let sub = messageDescriptor(of: fieldNumber, in: descriptor) {
                    guard depthLeft > 0 else { return false }
                    guard walk(&reader, end: bodyEnd, descriptor: sub, depthLeft: depthLeft - 1) else { return false }
                }
                reader.offset = bodyEnd
            default:
                return true  // groups and unknown wire types: the parser decides
            }
        }
        return true
    }

    /// The descriptor of a message-typed field, or nil for any other field.
    private static func messageDescriptor(
        of number: UInt32, in descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    ) -> UnsafePointer<ProtobufCMessageDescriptor>? {
        let fields = UnsafeBufferPointer(start: descriptor.pointee.fields, count: Int(descriptor.pointee.n_fields))
        // Generated field tables are sorted by number.
        var low = 0
        var high = fields.count - 1
        while low <= high {
            let mid = (low + high) / 2
            let field = fields[mid]
            if field.id == number {
                guard field.type == PROTOBUF_C_TYPE_MESSAGE, let sub = field.descriptor else { return nil }
                return sub.assumingMemoryBound(to: ProtobufCMessageDescriptor.self)
            }
            if field.id < number { low = mid + 1 } else { high = mid - 1 }
        }
        return nil
    }
}

/// Reads protobuf varints from a byte buffer.
private struct WireReader {
    let bytes: UnsafeRawBufferPointer
    var offset = 0

    mutating func varint() -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count, shift < 64 {
            let byte = bytes[offset]
            offset += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        return nil
    }
}
