/// Why bytes are not a JSON document.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Byte offset of the problem.
    public var offset: Int
    /// What was wrong.
    public var reason: String

    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

/// A small strict RFC 8259 parser into ``JSONValue``.
///
/// Duplicate object keys keep the last value. Nesting is limited to
/// ``maximumDepth`` so hostile input cannot exhaust the stack.
public struct JSONParser {
    /// The deepest nesting of arrays and objects accepted.
    public static let maximumDepth = 256

    /// Parses one JSON document (surrounding whitespace allowed).
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        let array = Array(bytes)
        var p = JSONParser(bytes: array)
        p.skipWhitespace()
        let v = try p.parseValue(depth: 0)
        p.skipWhitespace()
        guard p.index == array.count else { throw p.error("trailing characters") }
        return v
    }

    /// Parses one JSON document from text.
    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    private let bytes: [UInt8]
    private var index = 0

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private func error(_ reason: String) -> JSONParseError {
        JSONParseError(offset: index, reason: reason)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func expectLiteral(_ lit: StaticString, _ value: JSONValue) throws(JSONParseError) -> JSONValue {
        let n = lit.utf8CodeUnitCount
        guard index + n <= bytes.count else { throw error("unexpected end") }
        let p = lit.utf8Start
        for i in 0..<n where bytes[index + i] != p[i] {
            throw error("invalid literal")
        }
        index += n
        return value
    }

    private mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth < Self.maximumDepth else { throw error("nesting deeper than \(Self.maximumDepth)") }
        guard index < bytes.count else { throw error("unexpected end") }
        switch bytes[index] {
        case UInt8(ascii: "n"): return try expectLiteral("null", .null)
        case UInt8(ascii: "t"): return try expectLiteral("true", .bool(true))
        case UInt8(ascii: "f"): return try expectLiteral("false", .bool(false))
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "["):
            index += 1
            var out: [JSONValue] = []
            skipWhitespace()
            if index < bytes.count && bytes[index] == UInt8(ascii: "]") { index += 1; return .array(out) }
            while true {
                skipWhitespace()
                out.append(try parseValue(depth: depth + 1))
                skipWhitespace()
                guard index < bytes.count else { throw error("unexpected end in array") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(out) }
                throw error("expected , or ]")
            }
        case UInt8(ascii: "{"):
            index += 1
            var out: [(key: String, value: JSONValue)] = []
            skipWhitespace()
            if index < bytes.count && bytes[index] == UInt8(ascii: "}") { index += 1; return .object([:]) }
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a string key") }
                let key = try parseString()
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected :") }
                index += 1
                skipWhitespace()
                out.append((key, try parseValue(depth: depth + 1)))
                skipWhitespace()
                guard index < bytes.count else { throw error("unexpected end in object") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(JSONObject(out)) }
                throw error("expected , or }")
            }
        default:
            return .number(try parseNumber())
        }
    }

    private mutating func parseNumber() throws(JSONParseError) -> Double {
        let start = index
        func digit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
        if index < bytes.count && bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, digit(bytes[index]) else { throw error("invalid value") }
        if bytes[index] == 0x30 {
            index += 1
        } else {
            while index < bytes.count && digit(bytes[index]) { index += 1 }
        }
        if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, digit(bytes[index]) else { throw error("digit expected after .") }
            while index < bytes.count && digit(bytes[index]) { index += 1 }
        }
        if index < bytes.count && (bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")) {
            index += 1
            if index < bytes.count && (bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")) { index += 1 }
            guard index < bytes.count, digit(bytes[index]) else { throw error("digit expected in exponent") }
            while index < bytes.count && digit(bytes[index]) { index += 1 }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard let d = Double(text), d.isFinite else {
            index = start
            throw error("number out of range")
        }
        return d
    }

    private mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("short \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[index]
            let d: UInt32
            switch b {
            case 0x30...0x39: d = UInt32(b - 0x30)
            case 0x41...0x46: d = UInt32(b - 0x41 + 10)
            case 0x61...0x66: d = UInt32(b - 0x61 + 10)
            default: throw error("bad hex digit in \\u escape")
            }
            v = v << 4 | d
            index += 1
        }
        return v
    }

    private mutating func parseString() throws(JSONParseError) -> String {
        index += 1  // opening quote
        var out: [UInt8] = []
        while true {
            guard index < bytes.count else { throw error("unterminated string") }
            let c = bytes[index]
            switch c {
            case UInt8(ascii: "\""):
                index += 1
                // Validate UTF-8: reject rather than silently repair.
                guard let s = String(validating: out, as: UTF8.self) else { throw error("invalid UTF-8 in string") }
                return s
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw error("unterminated escape") }
                let e = bytes[index]
                index += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try parseHex4()
                    if scalar >= 0xD800 && scalar < 0xDC00 {
                        guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                            throw error("unpaired surrogate")
                        }
                        index += 2
                        let low = try parseHex4()
                        guard low >= 0xDC00 && low < 0xE000 else { throw error("unpaired surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if scalar >= 0xDC00 && scalar < 0xE000 {
                        throw error("unpaired surrogate")
                    }
                    out.append(contentsOf: UTF8.encode(Unicode.Scalar(scalar)!)!)
                default:
                    throw error("invalid escape")
                }
            case 0x00..<0x20:
                throw error("control character in string")
            default:
                out.append(c)
                index += 1
            }
        }
    }
}
