import HeraldPrimitives

/// The client flags' values that need more than ArgumentParser's parsing:
/// translations, JSON objects, times, tokens. Each refuses a bad value with
/// a local ``ClientFailure`` naming the flag.
public enum ClientInput {
    /// A `LocalizedText`: `plain`, else `LOCALE=TEXT` translations; nil when neither.
    public static func localizedText(plain: String?, translations: [String], flag: String) throws(ClientFailure) -> ProtoValue? {
        if let plain { return .message([("text", .string(plain))]) }
        guard !translations.isEmpty else { return nil }
        var entries: [ProtoValue] = []
        var seen: Set<String> = []
        for item in translations {
            guard let equals = item.firstIndex(of: "="), equals != item.startIndex else {
                throw .local("\(flag) \(item): give LOCALE=TEXT, e.g. \(flag) de=Hallo")
            }
            let locale = String(item[..<equals])
            guard seen.insert(locale).inserted else { throw .local("\(flag): locale \(locale) is given twice") }
            entries.append(.message([("key", .string(locale)), ("value", .string(String(item[item.index(after: equals)...])))]))
        }
        return .message([("translations", .list(entries))])
    }

    /// A JSON object as a google.protobuf.Struct.
    public static func jsonObject(_ text: String, flag: String) throws(ClientFailure) -> ProtoValue {
        let json: JSONValue
        do {
            json = try JSONParser.parse(text)
        } catch {
            throw .local("\(flag): \(error)")
        }
        return try ProtoValue.structValue(json, flag: flag)
    }

    /// Seconds from now (a number) as RFC 3339 UTC, or the text as given
    /// (an RFC 3339 time, which the server checks).
    public static func time(_ text: String, flag: String, nowMilliseconds: Int64) throws(ClientFailure) -> String {
        guard let seconds = Double(text) else { return text }
        guard seconds.isFinite, abs(seconds) <= 400 * 24 * 3600 else { throw .local("\(flag) \(text): too far from now") }
        return RFC3339.format(Timestamp(milliseconds: nowMilliseconds + Int64((seconds * 1000).rounded())))
    }

    /// The token of a `--token-file`'s contents (its first line, spaces
    /// around it ignored), or of HERALD_TOKEN.
    public static func token(_ contents: String, source: String) throws(ClientFailure) -> String {
        // The first line ("\r\n" is one Character: cut on the bytes), spaces and tabs around it ignored.
        let bytes = contents.utf8.prefix { $0 != 0x0A && $0 != 0x0D }
        let isBlank = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        let token = String(decoding: bytes.drop(while: isBlank).reversed().drop(while: isBlank).reversed(), as: UTF8.self)
        guard !token.isEmpty else { throw .local("\(source) is empty") }
        guard token.utf8.count <= 4096, token.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw .local("\(source) must hold one token on its first line: printable ASCII, no spaces, at most 4096 bytes")
        }
        return token
    }
}
