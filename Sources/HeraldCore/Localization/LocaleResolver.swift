import HeraldPrimitives

/// Picks the translation for a device locale.
///
/// Order (SPEC §4): 1. the exact tag, case-insensitive with `_` = `-`
/// (`en_us` finds `en-US`); 2. the device tag's language alone (`de-CH` finds
/// `de`); 3. a translation in the same language with another region (`de-AT`
/// finds `de-DE`; the first such tag in byte order — our addition, because it
/// is what a German speaker expects over an English default); 4. the
/// message's `default_locale`.
public enum LocaleResolver {
    /// How a locale was found.
    public enum Match: String, Sendable, Hashable {
        case exact
        case language
        case sameLanguage = "same_language"
        case defaultLocale = "default_locale"
    }

    /// The chosen translation key (as spelled in the message) and how it was
    /// found; nil when `available` is empty and there is no default.
    public static func resolve(requested: String?, available: some Collection<String>, defaultLocale: String?) -> (locale: String, match: Match)? {
        if let requested, !requested.isEmpty {
            // Byte-level: no substrings or index conversions on this path.
            let found: (String, Match)? = withBytes(requested) { r in
                for tag in available where withBytes(tag, { equalFolded($0, r) }) { return (tag, .exact) }
                let lang = UnsafeBufferPointer(rebasing: r[0..<languageLength(r)])
                if lang.count < r.count {
                    for tag in available where withBytes(tag, { equalFolded($0, lang) }) { return (tag, .language) }
                }
                var best: String?
                for tag in available where withBytes(tag, { t in equalFolded(UnsafeBufferPointer(rebasing: t[0..<languageLength(t)]), lang) }) {
                    if best == nil || JSONWriter.keyOrder(tag, best!) { best = tag }
                }
                if let best { return (best, .sameLanguage) }
                return nil
            }
            if let found { return found }
        }
        if let d = defaultLocale {
            for tag in available where tagsEqual(tag, d) { return (tag, .defaultLocale) }
        }
        return nil
    }

    /// The length of the language subtag: bytes before the first `-` or `_`.
    @inline(__always)
    static func languageLength(_ tag: UnsafeBufferPointer<UInt8>) -> Int {
        var i = 0
        while i < tag.count && tag[i] != UInt8(ascii: "-") && tag[i] != UInt8(ascii: "_") { i += 1 }
        return i
    }

    /// The language subtag: the part before the first `-` or `_`.
    static func language(of tag: String) -> Substring {
        if let i = tag.utf8.firstIndex(where: { $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }) {
            return tag[..<i]
        }
        return tag[...]
    }

    /// Tag equality: ASCII case-insensitive, `_` equal to `-`.
    public static func tagsEqual(_ a: String, _ b: String) -> Bool {
        withBytes(a) { pa in withBytes(b) { pb in equalFolded(pa, pb) } }
    }

    /// Tag equality for substrings (language subtags).
    public static func tagsEqual(_ a: Substring, _ b: Substring) -> Bool {
        withBytes(a) { pa in withBytes(b) { pb in equalFolded(pa, pb) } }
    }

    /// Tag equality between a tag and a language subtag.
    public static func tagsEqual(_ a: String, _ b: Substring) -> Bool {
        tagsEqual(a[...], b)
    }

    @inline(__always)
    static func equalBytes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        var i = 0
        while i < a.count {
            if a[i] != b[i] { return false }
            i += 1
        }
        return true
    }

    @inline(__always)
    static func equalFolded(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        var i = 0
        while i < a.count {
            if a[i] != b[i] && fold(a[i]) != fold(b[i]) { return false }
            i += 1
        }
        return true
    }

    /// The canonical form used to compare tags: lower case, `_` → `-`.
    public static func normalized(_ tag: String) -> String {
        String(decoding: tag.utf8.map(fold), as: UTF8.self)
    }

    @inline(__always)
    static func fold(_ c: UInt8) -> UInt8 {
        if c >= 0x41 && c <= 0x5A { return c | 0x20 }
        if c == UInt8(ascii: "_") { return UInt8(ascii: "-") }
        return c
    }

    /// Whether `tag` is shaped like a BCP 47 tag: 1–35 ASCII letters, digits,
    /// `-` or `_`, starting with a letter, no empty subtags.
    public static func isWellFormed(_ tag: String) -> Bool {
        withBytes(tag) { isWellFormed($0) }
    }

    /// ``isWellFormed(_:)`` on UTF-8 bytes.
    @inline(__always)
    static func isWellFormed(_ u: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !u.isEmpty, u.count <= 35 else { return false }
        guard (u[0] | 0x20) >= 0x61 && (u[0] | 0x20) <= 0x7A else { return false }
        var prevSep = true
        for c in u {
            let isAlpha = (c | 0x20) >= 0x61 && (c | 0x20) <= 0x7A
            let isDigit = c >= 0x30 && c <= 0x39
            if c == UInt8(ascii: "-") || c == UInt8(ascii: "_") {
                if prevSep { return false }
                prevSep = true
            } else if isAlpha || isDigit {
                prevSep = false
            } else {
                return false
            }
        }
        return !prevSep
    }
}
