import CInterop
import HeraldCore
import HeraldProtos

/// One linear pass over a serialized request, driven by the generated
/// protobuf-c descriptors, before protobuf-c parses it.
///
/// It finds what protobuf-c cannot be trusted with or cannot tell us:
/// - **Nesting.** protobuf-c's parser recurses once per nested message with
///   no limit of its own: a `google.protobuf.Struct` nested a million levels
///   deep would overflow the event loop's stack.
/// - **NUL bytes in strings.** protobuf-c hands strings over as
///   NUL-terminated `char *`, so `alice\0mallory` would silently become
///   `alice`. Only the wire bytes still have the length: every string field
///   (nested messages, map keys and values, `Struct` string values) is
///   scanned, and the first NUL is reported with the field's path.
/// - **Repeated embedded messages.** A non-repeated message field may occur
///   more than once on the wire; protobuf merges the occurrences. protobuf-c
///   1.4 merges them with `merge_messages`, which fails on any message with
///   a oneof that neither occurrence sets (Content's `badge_value`), so such
///   requests must be rewritten first (``WireRewrite``).
/// - **Unknown fields**, which must not be stored.
///
/// Malformed bytes end the walk without a verdict: the parser rejects them.
struct WireWalk {
    /// protobuf's own default recursion limit.
    static let nestingLimit = 100

    enum Problem: Equatable {
        /// Messages nest deeper than ``nestingLimit``.
        case tooDeep
        /// A string field holds a NUL byte; the field path in the API's spelling.
        case nul(field: String)
    }

    private(set) var problem: Problem?
    /// A non-repeated message field occurs twice in one message.
    private(set) var repeatedMessages = false
    /// A field number the descriptors do not know occurs somewhere.
    private(set) var unknownFields = false
    /// The bytes do not parse; the parser will say so.
    private(set) var malformed = false

    private let bytes: UnsafeRawBufferPointer
    private let wellKnown = MessageKind.WellKnown()
    private var path: [PathPart] = []

    /// Walks `bytes` as a `descriptor` message.
    init(_ bytes: UnsafeRawBufferPointer, descriptor: UnsafePointer<ProtobufCMessageDescriptor>) {
        self.bytes = bytes
        path.reserveCapacity(16)  // one allocation for the usual depth
        _ = walk(from: 0, to: bytes.count, descriptor, MessageKind(descriptor, wellKnown), depthLeft: Self.nestingLimit)
    }

    /// The problem as a violation; `message` names the request type.
    static func violation(_ problem: Problem, message: String) -> FieldViolation {
        switch problem {
        case .tooDeep: FieldViolation(field: message, reason: "nests messages deeper than \(nestingLimit) levels")
        case .nul(let field): FieldViolation(field: field, reason: "contains a NUL byte")
        }
    }

    /// Whether one of the top-level fields `numbers` occurs in `bytes`.
    static func hasTopLevelField(_ bytes: UnsafeRawBufferPointer, numbers: Set<UInt32>) -> Bool {
        guard !numbers.isEmpty else { return false }
        var reader = WireReader(bytes: bytes, offset: 0, end: bytes.count)
        while !reader.atEnd {
            guard let field = reader.field() else { return false }
            if numbers.contains(field.number) { return true }
        }
        return false
    }

    // MARK: Walk

    /// False when the walk must stop (a problem or malformed bytes).
    /// `kind` is `MessageKind(descriptor)`, found once by the caller.
    private mutating func walk(
        from start: Int, to end: Int, _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, _ kind: MessageKind,
        depthLeft: Int
    ) -> Bool {
        var reader = WireReader(bytes: bytes, offset: start, end: end)
        var seen: UInt64 = 0
        var listIndex = 0
        var last = -1  // the previous field's index: fields come in order, repeated ones in a row
        while !reader.atEnd {
            guard let field = reader.field() else { return fail() }
            guard let index = WireDescriptors.fieldIndex(of: field.number, in: descriptor, near: last) else {
                unknownFields = true
                continue
            }
            last = index
            let fd = descriptor.pointee.fields[index]
            guard let payload = field.payload else { continue }  // scalars: nothing to check
            switch fd.type {
            case PROTOBUF_C_TYPE_STRING:
                // (Map keys were checked before entering their entry.)
                if memchr(bytes.baseAddress! + payload.lowerBound, 0, payload.count) != nil {
                    problem = .nul(field: render(path + [part(for: fd, kind: kind, listIndex: listIndex)]))
                    return false
                }
            case PROTOBUF_C_TYPE_MESSAGE:
                if fd.label != PROTOBUF_C_LABEL_REPEATED {
                    // One bit per field index; a message with more fields
                    // than bits is treated as repeating (the rewrite is exact).
                    let bit: UInt64 = index < 64 ? 1 << UInt64(index) : 0
                    if bit == 0 || seen & bit != 0 { repeatedMessages = true }
                    seen |= bit
                }
                guard depthLeft > 0 else {
                    problem = .tooDeep
                    return false
                }
                let sub = fd.descriptor!.assumingMemoryBound(to: ProtobufCMessageDescriptor.self)
                var entered = part(for: fd, kind: kind, listIndex: listIndex)
                let subKind = MessageKind(sub, wellKnown)
                if subKind == .mapEntry {
                    switch mapKey(in: payload) {
                    case .nul:
                        problem = .nul(field: render(path + [entered], keyProblem: true))
                        return false
                    case .found(let key):
                        entered = kind == .structObject ? .structKey(key) : .mapKey(fd.name, key)
                    case .absent:
                        break
                    }
                }
                path.append(entered)
                defer { path.removeLast() }
                guard walk(from: payload.lowerBound, to: payload.upperBound, sub, subKind, depthLeft: depthLeft - 1) else { return false }
            default:
                break
            }
            if kind == .listValue { listIndex += 1 }
        }
        return true
    }

    private mutating func fail() -> Bool {
        malformed = true
        return false
    }

    /// The key of a map entry (field 1), the last one when repeated.
    private enum MapKey {
        case found(Range<Int>)
        case nul
        case absent
    }

    private func mapKey(in entry: Range<Int>) -> MapKey {
        var reader = WireReader(bytes: bytes, offset: entry.lowerBound, end: entry.upperBound)
        var key: Range<Int>?
        while !reader.atEnd {
            guard let field = reader.field() else { return .absent }
            if field.number == 1, let payload = field.payload { key = payload }
        }
        guard let key else { return .absent }
        if memchr(bytes.baseAddress! + key.lowerBound, 0, key.count) != nil { return .nul }
        return .found(key)
    }

    // MARK: Paths

    /// Field paths use the API's names; `Struct`, `Value` and `ListValue`
    /// are spelled as JSON (`content.user_info.deeplink`, `ios.list[2]`)
    /// and map entries by key (`content.title.translations[de]`).
    private enum PathPart {
        case name(UnsafePointer<CChar>)
        case mapKey(UnsafePointer<CChar>, Range<Int>)
        case structKey(Range<Int>)
        case index(Int)
        case none
    }

    private func part(for fd: ProtobufCFieldDescriptor, kind: MessageKind, listIndex: Int) -> PathPart {
        switch kind {
        case .structObject, .value, .mapEntry: .none
        case .listValue: .index(listIndex)
        case .other: .name(fd.name)
        }
    }

    private func render(_ parts: [PathPart], keyProblem: Bool = false) -> String {
        var out = ""
        for part in parts {
            switch part {
            case .name(let name): out += (out.isEmpty ? "" : ".") + String(cString: name)
            case .mapKey(let name, let key):
                out += (out.isEmpty ? "" : ".") + String(cString: name) + "[" + ErrorText.truncated(text(key)) + "]"
            case .structKey(let key): out += "." + ErrorText.truncated(text(key))
            case .index(let i): out += "[\(i)]"
            case .none: break
            }
        }
        return keyProblem ? out + " (a key)" : out
    }

    private func text(_ range: Range<Int>) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }
}

/// How a message type is spelled in field paths.
enum MessageKind: Equatable {
    case structObject, value, listValue, mapEntry, other

    /// The addresses of the generated `Struct`, `Value` and `ListValue`
    /// descriptors: found once per walk (a `static let` would cost a
    /// `swift_once` per message), compared by address.
    struct WellKnown {
        let structObject = UInt(bitPattern: Google__Protobuf__Struct.descriptor)
        let value = UInt(bitPattern: Google__Protobuf__Value.descriptor)
        let listValue = UInt(bitPattern: Google__Protobuf__ListValue.descriptor)
    }

    init(_ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, _ wellKnown: WellKnown = WellKnown()) {
        let address = UInt(bitPattern: descriptor)
        if address == wellKnown.structObject {
            self = .structObject
        } else if address == wellKnown.value {
            self = .value
        } else if address == wellKnown.listValue {
            self = .listValue
        } else if descriptor.pointee.n_fields == 2, Self.named(descriptor.pointee.fields[0].name, "key"),
                  Self.named(descriptor.pointee.fields[1].name, "value") {
            self = .mapEntry
        } else {
            self = .other
        }
    }

    /// Whether the C string `name` is `expected` (ASCII), without a libc call.
    private static func named(_ name: UnsafePointer<CChar>, _ expected: StaticString) -> Bool {
        let bytes = expected.utf8Start
        for index in 0..<expected.utf8CodeUnitCount where UInt8(bitPattern: name[index]) != bytes[index] {
            return false
        }
        return name[expected.utf8CodeUnitCount] == 0
    }
}

/// Field lookups in generated descriptors.
enum WireDescriptors {
    /// The index of field `number` in the descriptor's table (sorted by
    /// number, as protoc-c generates it), or nil for an unknown field.
    static func fieldIndex(of number: UInt32, in descriptor: UnsafePointer<ProtobufCMessageDescriptor>) -> Int? {
        fieldIndex(of: number, in: descriptor, near: -1)
    }

    /// ``fieldIndex(of:in:)``, trying `hint` and `hint + 1` first (the
    /// previous field's index: fields come in order, repeated ones in a row).
    @inline(__always)
    static func fieldIndex(of number: UInt32, in descriptor: UnsafePointer<ProtobufCMessageDescriptor>, near hint: Int) -> Int? {
        // A message with no fields (StatusRequest) has a nil table.
        guard let fields = descriptor.pointee.fields else { return nil }
        let count = Int(descriptor.pointee.n_fields)
        if hint >= 0 && hint < count && fields[hint].id == number { return hint }
        if hint + 1 >= 0 && hint + 1 < count && fields[hint + 1].id == number { return hint + 1 }
        return search(number, fields, count)
    }

    private static func search(_ number: UInt32, _ fields: UnsafePointer<ProtobufCFieldDescriptor>, _ count: Int) -> Int? {
        var low = 0
        var high = count - 1
        while low <= high {
            let mid = (low + high) / 2
            let id = fields[mid].id
            if id == number { return mid }
            if id < number { low = mid + 1 } else { high = mid - 1 }
        }
        return nil
    }
}

/// One field on the wire.
struct WireField {
    var number: UInt32
    var wireType: UInt8
    /// The whole field: key, length and value.
    var range: Range<Int>
    /// A length-delimited field's payload.
    var payload: Range<Int>?
}

/// Reads protobuf fields from a byte range.
struct WireReader {
    let bytes: UnsafeRawBufferPointer
    var offset: Int
    let end: Int

    var atEnd: Bool { offset >= end }

    /// The next field, or nil when the bytes are malformed (groups and
    /// unknown wire types included: the parser decides about those).
    mutating func field() -> WireField? {
        let start = offset
        guard let key = varint(), key >> 3 != 0, key >> 3 <= UInt64(UInt32.max) else { return nil }
        let wireType = UInt8(key & 7)
        var payload: Range<Int>?
        switch wireType {
        case 0: guard varint() != nil else { return nil }
        case 1: guard end - offset >= 8 else { return nil }; offset += 8
        case 5: guard end - offset >= 4 else { return nil }; offset += 4
        case 2:
            guard let length = varint(), length <= UInt64(end - offset) else { return nil }
            payload = offset..<(offset + Int(length))
            offset += Int(length)
        default: return nil
        }
        return WireField(number: UInt32(key >> 3), wireType: wireType, range: start..<offset, payload: payload)
    }

    @inline(__always)
    mutating func varint() -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while offset < end, shift < 64 {
            let byte = bytes[offset]
            offset += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        return nil
    }
}
