/// HTML escaping, done in one place: every byte of caller data that reaches
/// a console page passes through ``text(_:)`` or ``attribute(_:)`` (the
/// ``HTMLWriter`` takes markup only as `StaticString`).
///
/// Both escape `&`, `<`, `>`, `"` and `'` (so a value is safe in text and in
/// a quoted attribute alike); NUL and the other C0/C1 control characters
/// that HTML forbids become U+FFFD (tab, line feed and carriage return are
/// kept).
enum HTMLEscape {
    static func text(_ value: String) -> String { escape(value) }

    static func attribute(_ value: String) -> String { escape(value) }

    private static func escape(_ value: String) -> String {
        var out = ""
        out.reserveCapacity(value.utf8.count)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            case "\t", "\n", "\r": out.unicodeScalars.append(scalar)
            case "\u{0}"..."\u{1F}", "\u{7F}"..."\u{9F}": out += "\u{FFFD}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Percent-encodes a query value (RFC 3986 unreserved kept).
    static func queryValue(_ value: String) -> String {
        var out = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                out += "%"
                out.unicodeScalars.append(hex[Int(byte >> 4)])
                out.unicodeScalars.append(hex[Int(byte & 15)])
            }
        }
        return out
    }
}
