/// A JSON value as the web API reads it: objects keep their members in
/// order (duplicates are refused while reading), numbers keep whether
/// they were written as integers.
public enum WebJSON: Sendable, Equatable {
    case null
    case bool(Bool)
    /// The value, and its integer value when it was written without a
    /// fraction or exponent and fits an `Int64`.
    case number(Double, integer: Int64?)
    case string(String)
    case array([WebJSON])
    case object([Member])

    /// One object member.
    public struct Member: Sendable, Equatable {
        /// The member's name.
        public var key: String
        /// Its value.
        public var value: WebJSON

        /// A member `key` holding `value`.
        public init(key: String, value: WebJSON) {
            self.key = key
            self.value = value
        }
    }

    /// The type's name in an error ("must be a string, got an object").
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// Why a body is not JSON the web API reads.
public struct WebJSONError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset of the problem.
    public var offset: Int
    /// What is wrong.
    public var reason: String
    /// The member path where it was found (`content.title`), when known.
    public var field: String?

    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

/// A strict RFC 8259 reader for request bodies from the network, with
/// bounds: nesting depth, string length, value count; a duplicate key, a
/// NUL (raw or `\u0000`), an unpaired surrogate, bytes after the value and
/// invalid UTF-8 are errors (Foundation's and ``JSONParser`` keep the last
/// of duplicate keys, which would let two readers of one body disagree).
public struct WebJSONReader {
    /// The bounds; the body's size is bounded before it gets here.
    public struct Limits: Sendable {
        /// Objects and arrays nested deeper than this are refused.
        public var maxDepth = 32
        /// Bytes of one string (after unescaping).
        public var maxStringBytes = 64 * 1024
        /// Values in the whole document.
        public var maxValues = 10_000

        /// The defaults above.
        public init() {}
    }

    /// Reads one JSON document (the whole of `bytes`).
    public static func read(_ bytes: [UInt8], limits: Limits = Limits()) throws(WebJSONError) -> WebJSON {
        var reader = WebJSONReader(bytes: bytes, limits: limits)
        reader.skipWhitespace()
        let value = try reader.value(depth: 0, path: { "" })
        reader.skipWhitespace()
        guard reader.index == bytes.count else { throw reader.error("unexpected bytes after the JSON value") }
        return value
    }

    // Internal, not private: ``ProtoJSONReader`` drives a reader token by
    // token to write wire bytes without building the tree of an object.
    let bytes: [UInt8]
    let limits: Limits
    var index = 0
    private var values = 0

    init(bytes: [UInt8], limits: Limits) {
        self.bytes = bytes
        self.limits = limits
    }

    /// `field` is called only here: member paths are made only for an error.
    func error(_ reason: String, field: () -> String = { "" }) -> WebJSONError {
        let path = field()
        return WebJSONError(offset: index, reason: reason, field: path.isEmpty ? nil : path)
    }

    mutating func skipWhitespace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D {
            index += 1
        }
    }

    private mutating func literal(_ text: StaticString, _ value: WebJSON) throws(WebJSONError) -> WebJSON {
        let count = text.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw error("truncated") }
        for offset in 0..<count where bytes[index + offset] != text.utf8Start[offset] {
            throw error("invalid literal")
        }
        index += count
        return value
    }

    /// Counts one more value of the document (refused past ``Limits/maxValues``).
    mutating func countValue() throws(WebJSONError) {
        values += 1
        guard values <= limits.maxValues else { throw error("more than \(limits.maxValues) values") }
    }

    mutating func value(depth: Int, path: () -> String) throws(WebJSONError) -> WebJSON {
        try countValue()
        guard index < bytes.count else { throw error("truncated", field: path) }
        switch bytes[index] {
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "\""): return .string(try string(field: path))
        case UInt8(ascii: "["):
            guard depth < limits.maxDepth else { throw error("nested deeper than \(limits.maxDepth)", field: path) }
            index += 1
            var items: [WebJSON] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            while true {
                skipWhitespace()
                let position = items.count
                func itemPath() -> String { "\(path())[\(position)]" }
                items.append(try value(depth: depth + 1, path: itemPath))
                skipWhitespace()
                guard index < bytes.count else { throw error("truncated", field: path) }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                guard bytes[index] == UInt8(ascii: "]") else { throw error("expected ',' or ']'", field: path) }
                index += 1
                return .array(items)
            }
        case UInt8(ascii: "{"):
            guard depth < limits.maxDepth else { throw error("nested deeper than \(limits.maxDepth)", field: path) }
            index += 1
            var members: [WebJSON.Member] = []
            var keys = Set<String>()
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard index < bytes.count else { throw error("truncated", field: path) }
                guard bytes[index] == UInt8(ascii: "\"") else { throw error("expected a member name", field: path) }
                let key = try string(field: path)
                func memberPath() -> String {
                    let parent = path()
                    return parent.isEmpty ? key : "\(parent).\(key)"
                }
                // Small objects (every request here): a scan; larger ones a set.
                if members.count < 16 {
                    guard !members.contains(where: { $0.key == key }) else {
                        throw error("duplicate key \"\(key)\"", field: memberPath)
                    }
                } else {
                    if keys.isEmpty { keys = Set(members.map(\.key)) }
                    guard keys.insert(key).inserted else { throw error("duplicate key \"\(key)\"", field: memberPath) }
                }
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'", field: memberPath) }
                index += 1
                skipWhitespace()
                members.append(WebJSON.Member(key: key, value: try value(depth: depth + 1, path: memberPath)))
                skipWhitespace()
                guard index < bytes.count else { throw error("truncated", field: path) }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                guard bytes[index] == UInt8(ascii: "}") else { throw error("expected ',' or '}'", field: path) }
                index += 1
                return .object(members)
            }
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try number(field: path)
        default:
            throw error("unexpected byte 0x\(String(bytes[index], radix: 16))", field: path)
        }
    }

    private mutating func number(field: () -> String) throws(WebJSONError) -> WebJSON {
        let start = index
        var integral = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number", field: field) }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            integral = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number", field: field) }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            integral = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number", field: field) }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        guard index - start <= 64 else { throw error("number longer than 64 characters", field: field) }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard let double = Double(text), double.isFinite else { throw error("number out of range", field: field) }
        return .number(double, integer: integral ? Int64(text) : nil)
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    mutating func string(field: () -> String) throws(WebJSONError) -> String {
        index += 1  // the opening quote
        // Fast path: printable ASCII up to the closing quote (valid UTF-8 as it
        // is, nothing to unescape); anything else goes the checked way below.
        var end = index
        while end < bytes.count, end - index <= limits.maxStringBytes {
            let byte = bytes[end]
            guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\\") else { break }
            if byte == UInt8(ascii: "\"") {
                let text = String(decoding: bytes[index..<end], as: UTF8.self)
                index = end + 1
                return text
            }
            end += 1
        }
        var out: [UInt8] = []
        while true {
            guard index < bytes.count else { throw error("truncated string", field: field) }
            guard out.count <= limits.maxStringBytes else {
                throw error("string longer than \(limits.maxStringBytes) bytes", field: field)
            }
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let text = String(validating: out, as: UTF8.self) else { throw error("invalid UTF-8", field: field) }
                guard out.count <= limits.maxStringBytes else {
                    throw error("string longer than \(limits.maxStringBytes) bytes", field: field)
                }
                return text
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw error("truncated string", field: field) }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4(field: field)
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                            throw error("unpaired surrogate", field: field)
                        }
                        index += 2
                        let low = try hex4(field: field)
                        guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate", field: field) }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw error("unpaired surrogate", field: field)
                    }
                    guard scalar != 0 else { throw error("NUL character in a string", field: field) }
                    guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid escape", field: field) }
                    out.append(contentsOf: Array(String(Character(unicode)).utf8))
                default:
                    throw error("invalid escape", field: field)
                }
            default:
                guard byte >= 0x20 else {
                    throw error(byte == 0 ? "NUL character in a string" : "control character in a string", field: field)
                }
                out.append(byte)
                index += 1
            }
        }
    }

    private mutating func hex4(field: () -> String) throws(WebJSONError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("truncated escape", field: field) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("invalid \\u escape", field: field)
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }
}
