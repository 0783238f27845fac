/// Why a delivery-policy spec (or a policies file) was refused: the line
/// (in a file), the key at fault and its value (quoted, truncated, control
/// bytes escaped), and the problem.
///
/// `line 3: cap "0/1h": the count must be 1...1000000`
public struct PolicySpecError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The 1-based line number in a policies file; nil for a single spec.
    public var line: Int?
    /// The key at fault (`cap`, `quiet-hours`, …); nil for the whole line.
    public var key: String?
    /// The value as given, already quoted and truncated for messages.
    public var quotedValue: String?
    /// What is wrong.
    public var problem: String

    /// The longest part of a value quoted in a message.
    public static let quotedPrefix = 64

    /// An error about `key` (and its `value`, quoted) or the whole line.
    public init(key: String?, value: Substring? = nil, _ problem: String, line: Int? = nil) {
        self.line = line
        self.key = key
        self.quotedValue = value.map(Self.quote)
        self.problem = problem
    }

    public var description: String {
        var text = line.map { "line \($0): " } ?? ""
        if let key {
            // A known key as it is; anything else (an unknown key is client input) quoted.
            let plain = !key.isEmpty && key.utf8.count <= 32 && key.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || $0 == UInt8(ascii: "-") }
            text += plain ? key : Self.quote(Substring(key))
        }
        if let quotedValue { text += (key == nil ? "" : " ") + quotedValue }
        if key != nil || quotedValue != nil { text += ": " }
        return text + problem
    }

    /// The same error at `line` of a file.
    func at(line number: Int) -> PolicySpecError {
        var copy = self
        copy.line = number
        return copy
    }

    /// `text` in quotes: at most ``quotedPrefix`` characters (then `…`),
    /// control bytes, quotes and backslashes escaped, so hostile input stays
    /// one printable line.
    public static func quote(_ text: Substring) -> String {
        var out = "\""
        for scalar in text.prefix(quotedPrefix).unicodeScalars {
            let escape = scalar.value < 0x20 || scalar.value == 0x7F || scalar == "\"" || scalar == "\\"
            out += escape ? scalar.escaped(asASCII: true) : String(scalar)
        }
        return out + (text.count > quotedPrefix ? "…\"" : "\"")
    }
}
