import HeraldPrimitives
import HeraldCore

/// The pieces every operator-facing line shares: a UTC timestamp with
/// milliseconds and JSON string escaping.
enum LogLine {
    /// `2026-11-23T06:45:01.123Z`: always three fraction digits, so lines sort
    /// and align.
    static func timestamp(milliseconds: Int64 = Timestamp.nowMilliseconds()) -> String {
        let fraction = Int(((milliseconds % 1000) + 1000) % 1000)
        let whole = RFC3339.format(Timestamp(milliseconds: milliseconds - Int64(fraction)))
        let digits = String(fraction)
        return String(whole.dropLast()) + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }

    /// Appends `text` as a JSON string (quotes included), escaping what JSON
    /// requires and every control character.
    static func appendJSONString(_ text: String, to out: inout String) {
        out.append("\"")
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out.append("\\\"")
            case "\\": out.append("\\\\")
            case "\n": out.append("\\n")
            case "\r": out.append("\\r")
            case "\t": out.append("\\t")
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = String(scalar.value, radix: 16)
                out.append("\\u" + String(repeating: "0", count: 4 - hex.count) + hex)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out.append("\"")
    }

    /// A value for a `key=value` text line: quoted when it has spaces,
    /// quotes or control characters, so one event stays one line.
    static func textValue(_ text: String) -> String {
        let plain = !text.isEmpty && text.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value != 0x7F && $0 != "\"" }
        if plain { return text }
        var out = ""
        appendJSONString(text, to: &out)
        return out
    }
}
