import CInterop

/// Rewrites a serialized message (already checked by ``WireWalk``) into an
/// equivalent one, in one linear pass.
///
/// - Every non-repeated message field that occurs more than once becomes
///   one occurrence whose body is the occurrences' bodies concatenated —
///   which is exactly protobuf's merge, and spares protobuf-c's
///   `merge_messages` (it fails on unset oneofs; see ``WireWalk``). Within a
///   oneof, a later member discards the earlier ones, as in parsing.
/// - Optionally, unknown fields are dropped at every level and some
///   top-level fields are dropped (what Schedule must not store).
///
/// Rewritten bodies get a five-byte length prefix (a valid, if not minimal,
/// varint), so each byte is copied once however deeply messages merge.
enum WireRewrite {
    static func rewrite(
        _ bytes: UnsafeRawBufferPointer, descriptor: UnsafePointer<ProtobufCMessageDescriptor>,
        dropUnknown: Bool = false, dropTopLevel: Set<UInt32> = []
    ) -> [UInt8] {
        var writer = Writer(bytes: bytes, dropUnknown: dropUnknown)
        writer.out.reserveCapacity(bytes.count + 16)
        writer.message([0..<bytes.count], descriptor, drop: dropTopLevel)
        return writer.out
    }

    private struct Writer {
        let bytes: UnsafeRawBufferPointer
        let dropUnknown: Bool
        var out: [UInt8] = []

        /// Writes the fields of the message made of `segments` (the bodies of
        /// all its occurrences, in wire order).
        mutating func message(
            _ segments: [Range<Int>], _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, drop: Set<UInt32>
        ) {
            var fields: [(field: WireField, index: Int?)] = []
            for segment in segments {
                var reader = WireReader(bytes: bytes, offset: segment.lowerBound, end: segment.upperBound)
                while !reader.atEnd {
                    // The walk found these bytes well-formed; stop if not.
                    guard let field = reader.field() else { break }
                    fields.append((field, WireDescriptors.fieldIndex(of: field.number, in: descriptor)))
                }
            }
            // A message with no fields has a nil table (and every index above is nil).
            guard let table = descriptor.pointee.fields else {
                for (field, _) in fields where !drop.contains(field.number) && !dropUnknown { copy(field.range) }
                return
            }

            // Occurrences of each non-repeated message field to merge, and
            // where the merged one goes (the last occurrence).
            var groups: [UInt32: (last: Int, bodies: [Range<Int>])] = [:]
            var oneofMember: [UInt32: UInt32] = [:]  // oneof (case offset) → member seen last
            for (ordinal, (field, index)) in fields.enumerated() {
                guard let index else { continue }
                let fd = table[index]
                if fd.flags & UInt32(PROTOBUF_C_FIELD_FLAG_ONEOF.rawValue) != 0 {
                    let oneof = UInt32(fd.quantifier_offset)
                    if let previous = oneofMember[oneof], previous != field.number { groups[previous] = nil }
                    oneofMember[oneof] = field.number
                }
                guard fd.type == PROTOBUF_C_TYPE_MESSAGE, fd.label != PROTOBUF_C_LABEL_REPEATED,
                      let body = field.payload else { continue }
                groups[field.number, default: (ordinal, [])].bodies.append(body)
                groups[field.number]!.last = ordinal
            }

            for (ordinal, (field, index)) in fields.enumerated() {
                if drop.contains(field.number) { continue }
                guard let index else {
                    if !dropUnknown { copy(field.range) }
                    continue
                }
                let fd = table[index]
                guard fd.type == PROTOBUF_C_TYPE_MESSAGE, let body = field.payload else {
                    copy(field.range)
                    continue
                }
                let sub = fd.descriptor!.assumingMemoryBound(to: ProtobufCMessageDescriptor.self)
                if fd.label == PROTOBUF_C_LABEL_REPEATED {
                    embedded(field.number, [body], sub)
                } else if let group = groups[field.number], group.last == ordinal {
                    embedded(field.number, group.bodies, sub)
                }
            }
        }

        private mutating func embedded(_ number: UInt32, _ bodies: [Range<Int>], _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>) {
            varint(UInt64(number) << 3 | 2)
            let lengthAt = out.count
            out.append(contentsOf: [0x80, 0x80, 0x80, 0x80, 0x00])
            message(bodies, descriptor, drop: [])
            var length = out.count - lengthAt - 5
            for i in 0..<4 {
                out[lengthAt + i] = UInt8(length & 0x7F) | 0x80
                length >>= 7
            }
            out[lengthAt + 4] = UInt8(length & 0x7F)
        }

        private mutating func copy(_ range: Range<Int>) {
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[range]))
        }

        private mutating func varint(_ value: UInt64) {
            var value = value
            while value >= 0x80 {
                out.append(UInt8(value & 0x7F) | 0x80)
                value >>= 7
            }
            out.append(UInt8(value))
        }
    }
}
